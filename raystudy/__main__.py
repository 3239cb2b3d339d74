from raystudy.cli import main

raise SystemExit(main())
