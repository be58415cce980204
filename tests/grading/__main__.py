import sys

from tests.grading.cli import main

sys.exit(main())
