import sys

from commstack.cli import main

sys.exit(main())
