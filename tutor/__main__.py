from tutor.cli.main import entry

entry()
