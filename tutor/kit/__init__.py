"""The lesson kit: everything a lesson's checks.py may import from the tutor, in one place.

A lesson's checks module declares STEPS (step id -> StepSpec) and make_inputs(); each step's
probe runs in the child beside the learner's code, its judge in the judge process. The names
below are the contract: docs/writing-a-lesson.md lists each with its signature, grouped by
topic (tests/unit/test_lesson_guide.py holds the two to each other), and
tests/unit/test_import_contracts.py holds lessons to importing only these. The engine's modules
behind them may move.
"""

from tutor.kit import fixed_dropout
from tutor.kit.borrowed import lend
from tutor.kit.built_module import (
    MADE_LIKELY,
    MADE_WORDS,
    ModuleRecipe,
    made_module,
    require_made,
)
from tutor.kit.cached_query import (
    attend_cached,
    cached_attention_step,
    cached_query_mistakes,
)
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
    DECODING_FAULT_WORDS,
    GENERATION_KEYS,
    GENERATION_WORDS,
    judge_generation_call,
    judge_loop_again,
    probe_generation,
)
from tutor.kit.heads import (
    causal_multi_head,
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
from tutor.kit.kept_references import Same
from tutor.kit.layer_checks import (
    LAYER_WORDS,
    constructor_facts,
    judge_layer_again,
    judge_layer_constructor,
    judge_layer_state,
    judge_layout,
    layer_words,
    linear_layout,
    require_again_ran,
    require_again_right,
)
from tutor.kit.layer_memory import judge_layer_memory, memory_settings, probe_layer_memory
from tutor.kit.layer_training import (
    diagnose_dropout,
    judge_dropout_modes,
    judge_gradients,
    judge_seeded_layer,
    likely_for_backward,
    probe_dropout_modes,
    probe_layer_story,
    probe_seeded_layer,
    reference_grads,
    require_backward_ran,
    weights_from_state,
)
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
from tutor.kit.lesson_settings import declared_settings
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
    STATE_FAULT_WORDS,
    state_fault_likely,
    state_shape_fault,
    state_value_fault,
    tokens_elsewhere,
)
from tutor.kit.step_discipline import (
    DISCIPLINE_KEYS,
    DISCIPLINE_WORDS,
    judge_step_discipline,
    probe_step_discipline,
    state_growth_fault,
)
from tutor.kit.step_grid import (
    STEP_CALL_KEYS,
    STEP_CALL_WORDS,
    STEP_RETURN_LIKELY,
    judge_step_call,
    probe_step_grid,
    require_out_state,
    require_states_near,
    step_call,
    step_call_words,
    step_return_likely,
)
from tutor.kit.step_trainable import judge_step_trained, probe_step_trained
from tutor.kit.step_use import StepAt, StepUse
from tutor.kit.timing_experiment import decoding_flops, probe_timings, timing_view
from tutor.kit.timing_step import (
    TimingStep,
    judge_timing_step,
    probe_timing_step,
    timing_settings,
    timing_step_spec,
)
from tutor.kit.torch_errors import (
    STATE_ERROR_WORDS,
    TORCH_ERRORS,
    state_error_likely,
    torch_error_kind,
)
from tutor.kit.training import judge_training_story, probe_training_story
from tutor.model import view_items as visuals
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
