"""A gRPC load generator for bench/grpc.ts in Python's grpcio (gRPC's C core, as Triton's Python
client uses): CONCURRENCY ModelInfer calls kept in flight (closed loop) on one channel for SECONDS,
each sending the same raw FP32 input. Prints one JSON line: requests, errors, seconds, p50, p99 (ms).

  python3 bench/grpc-load.py STUBS_DIR PORT MODEL INPUT_NAME SHAPE INPUT_FILE CONCURRENCY SECONDS
"""
import json
import sys
import threading
import time

stubs, port, model, input_name, shape, input_file, concurrency, seconds = sys.argv[1:9]
sys.path.insert(0, stubs)
import grpc  # noqa: E402
import inference_pb2 as pb  # noqa: E402
import inference_pb2_grpc as rpc  # noqa: E402

channel = grpc.insecure_channel("127.0.0.1:" + port, options=[("grpc.max_receive_message_length", -1)])
stub = rpc.GRPCInferenceServiceStub(channel)
request = pb.ModelInferRequest(model_name=model)
tensor = request.inputs.add()
tensor.name = input_name
tensor.datatype = "FP32"
tensor.shape.extend(int(d) for d in shape.split(","))
with open(input_file, "rb") as f:
    request.raw_input_contents.append(f.read())

stub.ModelInfer(request, timeout=60)  # warm the channel
latencies = []
errors = [0]
lock = threading.Lock()
done = threading.Event()
end = time.perf_counter() + float(seconds)
in_flight = [0]


def start():
    t0 = time.perf_counter()
    future = stub.ModelInfer.future(request, timeout=60)

    def finished(f):
        with lock:
            if f.exception() is None:
                latencies.append((time.perf_counter() - t0) * 1000)
            else:
                errors[0] += 1
            if time.perf_counter() < end:
                again = True
            else:
                again = False
                in_flight[0] -= 1
                if in_flight[0] == 0:
                    done.set()
        if again:
            start()

    future.add_done_callback(finished)


begin = time.perf_counter()
with lock:
    in_flight[0] = int(concurrency)
for _ in range(int(concurrency)):
    start()
done.wait()
elapsed = time.perf_counter() - begin
latencies.sort()


def pct(p):
    if not latencies:
        return float("nan")
    rank = p / 100 * (len(latencies) - 1)
    lo = int(rank)
    hi = min(len(latencies) - 1, lo + 1)
    return latencies[lo] * (1 - (rank - lo)) + latencies[hi] * (rank - lo)


print(json.dumps({"requests": len(latencies), "errors": errors[0], "seconds": elapsed, "p50": pct(50), "p99": pct(99)}))
