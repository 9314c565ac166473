"""Refuses to build this package without its model files: tools/model_wheel.py
puts them in place (checked by SHA-256) and builds the wheel."""

from pathlib import Path

from setuptools import setup

PACKAGE = Path(__file__).resolve().parent / "mnemo_model_bge_small_en_v1_5"
missing = [n for n in ("model_quantized.onnx", "tokenizer.json") if not (PACKAGE / n).is_file()]
if missing:
    raise SystemExit(
        f"{PACKAGE} lacks {', '.join(missing)}: build this package with "
        "`python tools/model_wheel.py OUT_DIR` from the repository's root"
    )
setup()
