"""The lesson kit: everything a lesson's checks.py may import from the tutor, in one place.

A lesson's checks module declares STEPS (step id -> StepSpec) and make_inputs(); each step's
probe runs in the child beside the learner's code, its judge in the judge process. What they use:

- Steps: StepSpec(probe, judge, functions); the probe gets a ProbeContext (ctx.get(name),
  ctx.call(fn, *args, primary=...), ctx.params, ctx.views), the judge a Verdict, the decoded
  outputs, the pristine inputs and a JudgeContext (source, kernels seen, views). views is False
  where nobody looks at the views (check, grade): what only feeds them may be skipped.
- Verdicts: v.expect / v.require (a check id, a condition, a message key and its parameters);
  msg() for nested messages; Stop ends a judge early.
- Settings: declared_settings(__file__, step) gives lesson.toml's defaults for ctx.params.
- Generic helpers: sizes (judge_other_sizes, size_explanation, literal_explanation,
  shape_explanation and rank_explanation for inputs of another rank, shapes_explainer
  for judge_other_sizes, ...),
  values (close, max_error, first_nonfinite, describe, shape_str, require_tensor, require_pair),
  inputs unchanged (clone_args, changed_input), kernel traps (no_kernel, graph_kernels),
  mistake matching (matching_mistake, likely_for_value, nest_likely), dropout that is the
  same for any correct code (fixed_dropout), scores past exp's range (LARGE_SCORES,
  large_scores_factor, large_scores_check, large_scores_likely; a layer's: large_scores_weights,
  on split_heads), values judged as one call
  (require_close; require_near for a message of the lesson's own).
- A layer in a probe: built by keyword (build_layer), the tutor's weights loaded
  (load_weights), its state_dict copied (state_dict_copy), one training step (train_step);
  weights for inputs LARGE_INPUT times larger (large_input_weights).
- Properties: attention weights with named hidden regions (Region, causal_future,
  judge_attention_weights; hidden_cells for the maps); each with a probe half and a judge
  half: leakage over every position (probe_leak_map, judge_leak_map), module state
  (module_state, state_unchanged), the training story (probe_training_story,
  judge_training_story), large inputs (LARGE_INPUT, judge_large_inputs), the learner's own
  code (lend, no_foreign; no_kernel reports both); a function called again, right and its
  first result unchanged (probe_calls_again, probe_named_calls_again for several calls a
  case, or call_kept and again_of, judge_called_again; judge_sizes_and_again, the lab's case,
  the other sizes and the call again in one;
  snapshot, same_value, trimmed); blame for a composed function's helpers (reference_helpers,
  stand_in, probe_helpers_replaced, probe_helper_calls, with_args, first_wrong_helper, blame_helpers,
  judge_helpers_replaced; helper_verdicts, both verdicts per case, computed once); a boolean
  mask on a named hidden region (judge_bool_mask, mask_difference, mask_row_text,
  mask_size_explanation, mask_sizes_explainer); a mask given is the mask used
  (other_mask, judge_mask_honoured); incremental decoding, a step function run token by token
  against the full pass (step_through, branches, run_steps, judge_steps, changed_later,
  changed_argument; state_lengths, growth_fault; weights_map, recompute_each; state_snapshot,
  same_tensors, pair_state), and a learner's own decoding loop recorded and judged (record_decoding,
  decoding_fault).
- A step function with state, `step(x_t, state) -> (out, state)`, as properties whose texts
  are the lesson's (role -> key tables): one call against the reference step over a grid of
  sizes and past lengths (probe_step_grid, step_call, judge_step_call, require_out_state,
  require_states_near; STEP_CALL_KEYS); its discipline as a caller uses it: growth, arguments and states kept,
  branches, a new sequence, two in turn, eval-mode dropout (probe_step_discipline,
  judge_step_discipline, state_growth_fault; DISCIPLINE_KEYS); trained from a constant state
  (probe_step_trained, judge_step_trained); a wrong state named (state_shape_fault,
  state_value_fault, tokens_elsewhere); a learner's generation loop over it (probe_generation,
  judge_generation_call, judge_loop_again; GENERATION_KEYS).
- A learner's module made as a notebook makes it (made_module, require_made); the kind of a
  PyTorch shape error (torch_error_kind, TORCH_ERRORS); a timing experiment of two ways
  (probe_timings, timing_view, decoding_flops).
- Attributes in the source, for a diagnosis: state stored on an object in a step function
  (attribute_store), a function reading an attribute (reads_attribute).
- Calls recorded: a layer's methods routed through the probe's own (intercept), each call a
  row of integers (CallRecorder, argument), the class-level call `type(obj).m(obj)` too.
- Weights of a multi-head attention layer, drawn for a judge (drawn_weights: attention_weights).
- Cost experiments: int_settings, doubling, timed, timed_rows, attention_flops, and cells that
  fit the app's 52-column text (human, ms_text, time_bar, TIME_BAR, longest_time,
  blank_lengths, slower_lengths), the table itself (timing_table, measured_of) and the notes
  under it (timing_remarks).
- Mistakes in scaled scores (scaled_scores_mistakes, scaled_scores_likely; from the weights,
  scale_from_weights_likely) and in a causal mask (causal_mask_mistakes, causal_mask_likely).
- Mistakes of single-head causal attention weights, from its arguments (single_head_mistakes,
  single_head_likely: the one the weights match); a case's arguments drawn
  (draw_single_head_case), Wq stretched to large scores (single_head_large_scores).
- Mistakes in masked softmax weights: masked_softmax, masked_softmax_mistakes (the usual wrong
  versions, for matching_mistake), masked_softmax_likely (the one weights match); weights right where the scores are large
  (judge_large_scores_weights).
- Experiments: the learner's exercise function or the tutor's (exercise_functions), calls
  chained (call_after); for their views, mean_row_entropy, nonfinite_rows, raised_note and
  first_raised_note (a call that raised, at its line), head_maps and head_panel (per head),
  pair_weights (the weights of an (out, weights) pair), made_note (the tutor made the change),
  same_tensor, returned_note (what an exercise's call did wrong), entropy_table (two sets of
  weights by their rows' entropy), before_after_maps (each head before and after a change),
  rows_note (rows named, one or many), row_sums_rows (a printout of the rows' sums).
- A layer's forward traced op by op, against the lab's route (traced_forward, ShapeTrace,
  trace_parting, trace_view); the memory of its (…, T, T) scores, by formula and as measured
  (seq_lens, memory_rows, measure_score_memory, SquareTensors, memory_table, memory_growth,
  chosen_settings; the whole view: memory_view); the whole step, on a learner's layer, at the
  app's settings (probe_layer_memory, judge_layer_memory, memory_settings).
- A stack of maps as the weights panel's entries (weights_panels); other sizes judged for
  cases that carry their size (judge_sized_cases, sizes_label).
- An output finite, then close (require_finite, require_finite_close), and so on the call whose
  scores are large (judge_large_output).
- The notebooks' leakage test (moved_before, require_no_leak, LEAK_TOLERANCE) and the panel
  of a full leakage map (leak_map_panel, reference_leak_outputs); an (out, weights) pair's parts
  (out_of_pair in the child, pair_output and require_pair_output in the judge; pair_weights
  above).
- Shapes asked for by name ({stage: shape}), judged against shapes measured on real tensors
  (judge_named_shapes, shapes_of, NAMED_SHAPES_WORDS); the whole step over a grid of sizes
  (probe_named_shapes, judge_named_shapes_at).
- An attention layer's properties (layer_checks), worded by the engine (LAYER_WORDS) unless a
  lesson passes its own keys by role:
  its constructor (constructor_facts, judge_layer_constructor; linear_layout, judge_layout), its
  state around forward (judge_layer_state), called again (judge_layer_again; require_again_right,
  require_again_ran),
  dropout in train and eval mode (probe_dropout_modes, judge_dropout_modes,
  diagnose_dropout), one backward pass on its own weights (probe_seeded_layer, reference_grads,
  weights_from_state, require_backward_ran, likely_for_backward, judge_gradients; all of
  it as a notebook's self-check: judge_seeded_layer), the training story of a new layer
  (probe_layer_story).
- An attention layer as a model uses it, declared once (LayerUse, LAYER_USE_ROLES; its inputs
  drawn with draw_layer_case): probed at every size and then used at the lab's
  (probe_layer_use), judged with every layer property above (judge_layer_use, judge_layer_case);
  why a size past the lab's fails (explain_layer_size); a masked_fill whose result is thrown
  away, named (unless_discarded).
- An attention function returning (out, weights), declared once (PairFunction,
  PAIR_FUNCTION_ROLES): its values over the sizes, called again, large scores and inputs, the
  training story (probe_pair_function, judge_pair_function, judge_pair_case) and its leakage
  at every size (probe_pair_leakage, judge_pair_leakage, judge_pair_leakage_case).
- Exercises, a learner's variant run in place of the original, with a view of what changed
  (Exercise, exercise_items, variant_said; probe_entropy_sweep and entropy_sweep_view,
  probe_mask_variant and mask_variant_view, probe_head_variant and head_variant_view);
  weights of a masked softmax, well-formed and close (judge_masked_weights); a function
  judged over a grid of sizes, its inputs unchanged, called again, its own code
  (SizedFunction: a step in one declaration; a function calling the learner's helpers,
  blamed on the first wrong one: probe_composed and judge_composed, with its Helpers). A
  function returning (out, weights): the notebook's printouts of a call (pair_printout), an
  experiment step drawing its weights per head (weights_heatmap_step).
- Visuals: the vocabulary in tutor.model.view_items (heading, note, table, bar, heatmap, row, waiting,
  keys, after_answer, with_question, weights), which the UI draws without knowing the lesson.

docs/writing-a-lesson.md is the guide. The engine's modules behind these names may move; this
list is the contract (tests/unit/test_import_contracts.py holds lessons to it).
"""

from pathlib import Path

from tutor.kit import fixed_dropout
from tutor.kit.borrowed import lend
from tutor.kit.built_module import made_module, require_made
from tutor.kit.call_again import (
    again_of,
    call_kept,
    judge_called_again,
    judge_sizes_and_again,
    probe_calls_again,
    probe_named_calls_again,
    same_value,
    snapshot,
    trimmed,
)
from tutor.kit.call_recorder import CallRecorder, argument, intercept
from tutor.kit.cost_table import (
    TIME_BAR,
    attention_flops,
    blank_lengths,
    doubling,
    human,
    int_settings,
    longest_time,
    measured_of,
    ms_text,
    slower_lengths,
    time_bar,
    timed,
    timed_rows,
    timing_remarks,
    timing_table,
)
from tutor.kit.drawn_weights import attention_weights
from tutor.kit.exercises import (
    Exercise,
    entropy_sweep_view,
    exercise_items,
    head_variant_view,
    mask_variant_view,
    probe_entropy_sweep,
    probe_head_variant,
    probe_mask_variant,
    variant_said,
)
from tutor.kit.experiments import (
    before_after_maps,
    call_after,
    entropy_table,
    exercise_functions,
    first_raised_note,
    head_maps,
    head_panel,
    made_note,
    mean_row_entropy,
    nonfinite_rows,
    pair_weights,
    raised_note,
    returned_note,
    row_sums_rows,
    rows_note,
    same_tensor,
)
from tutor.kit.finite import (
    judge_large_output,
    require_finite,
    require_finite_close,
)
from tutor.kit.generation_loop import (
    GENERATION_KEYS,
    judge_generation_call,
    judge_loop_again,
    probe_generation,
)
from tutor.kit.heads import (
    large_scores_weights,
    multi_head_mistakes,
    split_heads,
)
from tutor.kit.helper_blame import (
    blame_helpers,
    first_wrong_helper,
    helper_verdicts,
    judge_helpers_replaced,
    probe_helper_calls,
    probe_helpers_replaced,
    reference_helpers,
    stand_in,
    with_args,
)
from tutor.kit.incremental import (
    branches,
    changed_argument,
    changed_later,
    decoding_fault,
    growth_fault,
    judge_steps,
    pair_state,
    recompute_each,
    record_decoding,
    require_arguments_kept,
    require_states_kept,
    run_steps,
    same_tensors,
    state_lengths,
    state_snapshot,
    step_through,
    stepped_weights_view,
    weights_map,
)
from tutor.kit.judge_tools import (
    ATOL,
    KERNEL_FRAGMENTS,
    LARGE_SCORES,
    LEAK_LIMIT,
    RTOL,
    Stop,
    Verdict,
    changed_input,
    close,
    describe,
    differ_explanation,
    discarded_call,
    failure_code,
    failure_params,
    first_nonfinite,
    front_dims,
    future_region,
    judge_leak_map,
    judge_other_sizes,
    judged,
    kept_state,
    large_scores_check,
    large_scores_factor,
    large_scores_likely,
    last_dim_of,
    leak_map,
    likely_for_value,
    literal_explanation,
    matching_mistake,
    max_error,
    msg,
    nest_likely,
    no_kernel,
    of_the_inputs,
    require_call_ran,
    require_pair,
    require_ran,
    require_tensor,
    round_matrix,
    row_place,
    rows_sum_to_one,
    shape_str,
    size_explanation,
    size_literals,
    squeeze_explanation,
    squeezes,
    state_explanation,
    state_unchanged,
)
from tutor.kit.layer_checks import (
    LAYER_WORDS,
    constructor_facts,
    diagnose_dropout,
    judge_dropout_modes,
    judge_gradients,
    judge_layer_again,
    judge_layer_constructor,
    judge_layer_state,
    judge_layout,
    judge_seeded_layer,
    layer_words,
    likely_for_backward,
    linear_layout,
    probe_dropout_modes,
    probe_layer_story,
    probe_seeded_layer,
    reference_grads,
    require_again_ran,
    require_again_right,
    require_backward_ran,
    weights_from_state,
)
from tutor.kit.layer_memory import judge_layer_memory, memory_settings, probe_layer_memory
from tutor.kit.layer_use import (
    LAYER_USE_ROLES,
    LayerUse,
    draw_layer_case,
    explain_layer_size,
    judge_layer_case,
    judge_layer_use,
    probe_layer_use,
    unless_discarded,
)
from tutor.kit.layers import build_layer, load_weights, state_dict_copy, train_step
from tutor.kit.leak_views import (
    LEAK_MAP_WORDS,
    LEAK_TOLERANCE,
    leak_map_panel,
    moved_before,
    reference_leak_outputs,
    require_no_leak,
)
from tutor.kit.magnitude import (
    LARGE_INPUT,
    judge_large_inputs,
    large_input_weights,
    require_close,
    require_near,
)
from tutor.kit.mask_checks import (
    causal_mask_likely,
    causal_mask_mistakes,
    judge_bool_mask,
    judge_mask_honoured,
    mask_difference,
    mask_row_text,
    mask_size_explanation,
    mask_sizes_explainer,
    other_mask,
)
from tutor.kit.masked_weights import judge_masked_weights
from tutor.kit.named_shapes import (
    NAMED_SHAPES_KEYS,
    NAMED_SHAPES_WORDS,
    judge_named_shapes,
    judge_named_shapes_at,
    probe_named_shapes,
    shapes_of,
)
from tutor.kit.own_code import no_foreign
from tutor.kit.pair_function import (
    PAIR_FUNCTION_ROLES,
    PairFunction,
    judge_pair_case,
    judge_pair_function,
    judge_pair_leakage,
    judge_pair_leakage_case,
    probe_pair_function,
    probe_pair_leakage,
)
from tutor.kit.pair_views import pair_printout, weights_heatmap_step
from tutor.kit.pairs import (
    out_of_pair,
    pair_output,
    require_pair_output,
)
from tutor.kit.panels import (
    judge_sized_cases,
    sizes_label,
    weights_panels,
)
from tutor.kit.probe_tools import (
    ProbeContext,
    clone_args,
    graph_kernels,
    module_state,
    probe_leak_map,
    token_changes,
)
from tutor.kit.regions import Region, causal_future, hidden_cells, judge_attention_weights
from tutor.kit.score_memory import (
    DTYPE_BYTES,
    DTYPES,
    SquareTensors,
    chosen_settings,
    measure_score_memory,
    memory_growth,
    memory_rows,
    memory_table,
    memory_view,
    seq_lens,
)
from tutor.kit.score_mistakes import (
    scale_from_weights_likely,
    scaled_scores_likely,
    scaled_scores_mistakes,
)
from tutor.kit.shape_trace import (
    TRACE_KEYS,
    TRACE_WORDS,
    ShapeTrace,
    trace_parting,
    trace_view,
    traced_forward,
)
from tutor.kit.shapes_explained import rank_explanation, shape_explanation, shapes_explainer
from tutor.kit.single_head import (
    draw_single_head_case,
    single_head_large_scores,
    single_head_likely,
    single_head_mistakes,
)
from tutor.kit.sized_function import Helpers, SizedFunction
from tutor.kit.softmax_mistakes import (
    judge_large_scores_weights,
    masked_softmax,
    masked_softmax_likely,
    masked_softmax_mistakes,
)
from tutor.kit.source_attributes import attribute_store, reads_attribute
from tutor.kit.spec import JudgeContext, StepSpec
from tutor.kit.state_faults import (
    state_shape_fault,
    state_value_fault,
    tokens_elsewhere,
)
from tutor.kit.step_discipline import (
    DISCIPLINE_KEYS,
    judge_step_discipline,
    probe_step_discipline,
    state_growth_fault,
)
from tutor.kit.step_grid import (
    STEP_CALL_KEYS,
    judge_step_call,
    probe_step_grid,
    require_out_state,
    require_states_near,
    step_call,
)
from tutor.kit.step_trainable import judge_step_trained, probe_step_trained
from tutor.kit.timing_experiment import decoding_flops, probe_timings, timing_view
from tutor.kit.torch_errors import TORCH_ERRORS, torch_error_kind
from tutor.kit.training import judge_training_story, probe_training_story
from tutor.model import view_items as visuals
from tutor.model.lesson import load_lesson
from tutor.model.view_items import (
    after_answer,
    bar,
    heading,
    heatmap,
    keys,
    note,
    row,
    table,
    waiting,
    weights,
    with_question,
)


def declared_settings(checks_file: str, step_id: str) -> dict:
    """A step's settings as lesson.toml declares their defaults ({id: default}): what a probe
    gets when no one chose (attn-tutor check); the app sends the learner's current ones."""
    return load_lesson(Path(checks_file).resolve().parent).step(step_id).default_settings()


__all__ = [
    "ATOL",
    "CallRecorder",
    "DISCIPLINE_KEYS",
    "DTYPES",
    "DTYPE_BYTES",
    "GENERATION_KEYS",
    "JudgeContext",
    "KERNEL_FRAGMENTS",
    "LARGE_INPUT",
    "LARGE_SCORES",
    "LAYER_WORDS",
    "LEAK_LIMIT",
    "LEAK_MAP_WORDS",
    "LEAK_TOLERANCE",
    "NAMED_SHAPES_KEYS",
    "NAMED_SHAPES_WORDS",
    "ProbeContext",
    "RTOL",
    "Region",
    "STEP_CALL_KEYS",
    "ShapeTrace",
    "SquareTensors",
    "StepSpec",
    "Stop",
    "TIME_BAR",
    "TORCH_ERRORS",
    "TRACE_KEYS",
    "TRACE_WORDS",
    "Verdict",
    "after_answer",
    "again_of",
    "argument",
    "attention_flops",
    "attention_weights",
    "attribute_store",
    "bar",
    "before_after_maps",
    "blame_helpers",
    "blank_lengths",
    "branches",
    "build_layer",
    "call_after",
    "causal_mask_likely",
    "causal_mask_mistakes",
    "decoding_flops",
    "entropy_table",
    "helper_verdicts",
    "judge_generation_call",
    "judge_loop_again",
    "judge_sizes_and_again",
    "judge_step_call",
    "judge_step_discipline",
    "judge_step_trained",
    "made_module",
    "made_note",
    "probe_generation",
    "probe_named_calls_again",
    "probe_step_discipline",
    "probe_step_grid",
    "probe_step_trained",
    "probe_timings",
    "require_again_right",
    "call_kept",
    "causal_future",
    "changed_argument",
    "changed_input",
    "changed_later",
    "chosen_settings",
    "clone_args",
    "close",
    "constructor_facts",
    "declared_settings",
    "decoding_fault",
    "describe",
    "diagnose_dropout",
    "differ_explanation",
    "discarded_call",
    "doubling",
    "exercise_functions",
    "failure_code",
    "failure_params",
    "first_nonfinite",
    "first_raised_note",
    "fixed_dropout",
    "front_dims",
    "future_region",
    "graph_kernels",
    "growth_fault",
    "head_maps",
    "head_panel",
    "heading",
    "heatmap",
    "first_wrong_helper",
    "hidden_cells",
    "human",
    "int_settings",
    "intercept",
    "judge_attention_weights",
    "judge_bool_mask",
    "judge_called_again",
    "judge_dropout_modes",
    "judge_gradients",
    "judge_helpers_replaced",
    "judge_large_inputs",
    "judge_layer_memory",
    "judge_layer_case",
    "judge_layer_use",
    "judge_pair_case",
    "judge_pair_function",
    "judge_pair_leakage",
    "judge_pair_leakage_case",
    "judge_large_output",
    "judge_large_scores_weights",
    "judge_layer_again",
    "judge_layer_constructor",
    "judge_layer_state",
    "judge_layout",
    "judge_leak_map",
    "judge_mask_honoured",
    "judge_named_shapes",
    "judge_named_shapes_at",
    "judge_other_sizes",
    "judge_seeded_layer",
    "judge_sized_cases",
    "judge_steps",
    "judge_training_story",
    "judged",
    "kept_state",
    "keys",
    "large_input_weights",
    "large_scores_check",
    "large_scores_factor",
    "large_scores_likely",
    "large_scores_weights",
    "multi_head_mistakes",
    "draw_single_head_case",
    "single_head_large_scores",
    "single_head_likely",
    "single_head_mistakes",
    "last_dim_of",
    "leak_map",
    "leak_map_panel",
    "lend",
    "layer_words",
    "LayerUse",
    "LAYER_USE_ROLES",
    "PairFunction",
    "PAIR_FUNCTION_ROLES",
    "draw_layer_case",
    "explain_layer_size",
    "unless_discarded",
    "likely_for_backward",
    "likely_for_value",
    "linear_layout",
    "literal_explanation",
    "load_weights",
    "longest_time",
    "mask_difference",
    "mask_row_text",
    "mask_size_explanation",
    "mask_sizes_explainer",
    "masked_softmax",
    "masked_softmax_likely",
    "masked_softmax_mistakes",
    "matching_mistake",
    "max_error",
    "mean_row_entropy",
    "measure_score_memory",
    "measured_of",
    "memory_growth",
    "memory_rows",
    "memory_table",
    "memory_view",
    "module_state",
    "moved_before",
    "ms_text",
    "msg",
    "nest_likely",
    "no_foreign",
    "no_kernel",
    "nonfinite_rows",
    "note",
    "of_the_inputs",
    "other_mask",
    "out_of_pair",
    "pair_output",
    "pair_state",
    "pair_weights",
    "probe_calls_again",
    "probe_dropout_modes",
    "probe_helper_calls",
    "probe_helpers_replaced",
    "probe_layer_story",
    "probe_leak_map",
    "probe_layer_memory",
    "memory_settings",
    "probe_named_shapes",
    "probe_layer_use",
    "probe_pair_function",
    "probe_pair_leakage",
    "probe_seeded_layer",
    "probe_training_story",
    "raised_note",
    "rank_explanation",
    "reads_attribute",
    "recompute_each",
    "record_decoding",
    "reference_grads",
    "reference_helpers",
    "reference_leak_outputs",
    "require_again_ran",
    "require_backward_ran",
    "require_close",
    "require_finite",
    "require_finite_close",
    "require_made",
    "require_near",
    "require_no_leak",
    "require_call_ran",
    "require_out_state",
    "require_pair",
    "require_pair_output",
    "require_ran",
    "require_states_near",
    "require_tensor",
    "returned_note",
    "round_matrix",
    "row",
    "row_place",
    "row_sums_rows",
    "rows_note",
    "rows_sum_to_one",
    "require_arguments_kept",
    "require_states_kept",
    "run_steps",
    "same_tensor",
    "same_tensors",
    "same_value",
    "scale_from_weights_likely",
    "scaled_scores_likely",
    "scaled_scores_mistakes",
    "seq_lens",
    "shape_explanation",
    "shapes_explainer",
    "shape_str",
    "shapes_of",
    "size_explanation",
    "size_literals",
    "sizes_label",
    "slower_lengths",
    "snapshot",
    "split_heads",
    "squeeze_explanation",
    "squeezes",
    "stand_in",
    "state_dict_copy",
    "state_explanation",
    "state_growth_fault",
    "state_lengths",
    "state_shape_fault",
    "state_snapshot",
    "state_unchanged",
    "state_value_fault",
    "step_call",
    "step_through",
    "stepped_weights_view",
    "table",
    "time_bar",
    "timed",
    "timed_rows",
    "timing_remarks",
    "timing_table",
    "timing_view",
    "token_changes",
    "tokens_elsewhere",
    "torch_error_kind",
    "trace_parting",
    "trace_view",
    "traced_forward",
    "train_step",
    "trimmed",
    "visuals",
    "waiting",
    "weights",
    "weights_from_state",
    "weights_map",
    "weights_panels",
    "with_args",
    "with_question",
    "Exercise",
    "entropy_sweep_view",
    "exercise_items",
    "head_variant_view",
    "mask_variant_view",
    "probe_entropy_sweep",
    "variant_said",
    "SizedFunction",
    "pair_printout",
    "weights_heatmap_step",
    "probe_mask_variant",
    "probe_head_variant",
    "judge_masked_weights",
    "Helpers",
]
