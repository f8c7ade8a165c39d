import sys

from deepseek_recipe.cli import main

sys.exit(main())
