"""deploy/*.py modules for the tests, imported by file path.

deploy/ never goes on sys.path: its airflow/ directory would then import as the ``airflow``
package and pass for a real Airflow in tests/test_dag.py.
"""

import importlib.util
from pathlib import Path

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def load_deploy_module(name: str):
    spec = importlib.util.spec_from_file_location(f"deploy_{name}", DEPLOY / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
