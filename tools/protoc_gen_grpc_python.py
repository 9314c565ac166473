"""protoc plugin that runs the gRPC Python generator bundled in grpcio-tools.

grpcio-tools ships the ``grpc_python`` generator compiled into its protoc
(``python -m grpc_tools.protoc --grpc_python_out=...``) but no standalone
``protoc-gen-grpc_python`` executable, and buf does not proxy ``grpc_python``
through protoc. This plugin speaks the protoc plugin protocol on stdin/stdout
and delegates to that bundled generator:

1. read the ``CodeGeneratorRequest`` buf sends on stdin;
2. write its ``proto_file`` list (every file to generate plus all of their
   imports, in dependency order) as a ``FileDescriptorSet``;
3. run the bundled protoc on it with ``--descriptor_set_in`` and
   ``--grpc_python_out=[PARAMETER:]TMPDIR`` for the requested files;
4. answer with a ``CodeGeneratorResponse`` holding the files it wrote.

Run by tools/protoc-gen-grpc_python with the project's virtualenv.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from google.protobuf import descriptor_pb2
from google.protobuf.compiler import plugin_pb2
from grpc_tools import protoc


def generate(request: plugin_pb2.CodeGeneratorRequest) -> plugin_pb2.CodeGeneratorResponse:
    response = plugin_pb2.CodeGeneratorResponse()
    # The bundled protoc checks the grpc_python generator's own feature support
    # and fails below if it lacks one, so advertising these here is safe.
    response.supported_features = (
        plugin_pb2.CodeGeneratorResponse.FEATURE_PROTO3_OPTIONAL
        | plugin_pb2.CodeGeneratorResponse.FEATURE_SUPPORTS_EDITIONS
    )
    response.minimum_edition = descriptor_pb2.EDITION_PROTO2
    response.maximum_edition = descriptor_pb2.EDITION_2024
    if not request.file_to_generate:
        return response

    with tempfile.TemporaryDirectory(prefix="protoc-gen-grpc_python-") as tmp:
        tmpdir = Path(tmp)
        descriptor_set = tmpdir / "request.binpb"
        descriptor_set.write_bytes(
            descriptor_pb2.FileDescriptorSet(file=request.proto_file).SerializeToString()
        )
        outdir = tmpdir / "out"
        outdir.mkdir()
        out_arg = f"{request.parameter}:{outdir}" if request.parameter else str(outdir)
        argv = [
            "grpc_tools.protoc",
            f"--descriptor_set_in={descriptor_set}",
            f"--grpc_python_out={out_arg}",
            *request.file_to_generate,
        ]
        # protoc's diagnostics go to stderr, which buf shows.
        status = protoc.main(argv)
        if status != 0:
            response.error = f"grpc_tools.protoc --grpc_python_out failed (exit {status})"
            return response
        for path in sorted(p for p in outdir.rglob("*") if p.is_file()):
            response.file.add(
                name=path.relative_to(outdir).as_posix(),
                content=path.read_text(encoding="utf-8"),
            )
    return response


def main() -> int:
    request = plugin_pb2.CodeGeneratorRequest.FromString(sys.stdin.buffer.read())
    sys.stdout.buffer.write(generate(request).SerializeToString())
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
