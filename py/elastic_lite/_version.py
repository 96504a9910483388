"""The package version (also the wheel's; read by scripts/build.d/20-wheel.sh via pyproject)."""

__version__ = "0.1.0"
