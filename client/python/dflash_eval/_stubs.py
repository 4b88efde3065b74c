"""The generated protobuf and gRPC modules (made by setup.py at build time)."""

try:
    from ._gen.dflash.eval.v1 import eval_pb2, resources_pb2, service_pb2, service_pb2_grpc
except ImportError as e:  # a source checkout used without installing
    raise ImportError(
        "dflash_eval's generated stubs are missing: install the package "
        "(pip install --no-build-isolation client/python), which runs protoc") from e

__all__ = ["eval_pb2", "resources_pb2", "service_pb2", "service_pb2_grpc"]
