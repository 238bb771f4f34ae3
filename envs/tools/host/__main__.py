from envs.tools.host.server import main

raise SystemExit(main())
