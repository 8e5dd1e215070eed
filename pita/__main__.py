from pita.cli import main

raise SystemExit(main())
