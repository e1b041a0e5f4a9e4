from torchcourse.cli import main

raise SystemExit(main())
