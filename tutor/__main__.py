from tutor.cli import entry

entry()
