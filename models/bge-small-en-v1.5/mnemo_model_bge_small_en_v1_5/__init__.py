"""BAAI's bge-small-en-v1.5 (384 dimensions, MIT), int8 ONNX, with its
tokenizer: the files are beside this module (``model_quantized.onnx``,
``tokenizer.json``). mnemo-server finds them through this distribution's
installed-file record, without importing it, and checks their SHA-256
before loading them (``mnemo_server/embedders/packaged.py``)."""

from pathlib import Path

DIRECTORY = Path(__file__).resolve().parent
GRAPH = DIRECTORY / "model_quantized.onnx"
TOKENIZER = DIRECTORY / "tokenizer.json"
