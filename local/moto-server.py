"""
moto's server, with each DynamoDB and SSM request applied atomically, as AWS applies it.

moto serves requests on threads and takes no lock in its DynamoDB or SSM backends, so a
conditional write checks its condition and writes in two steps that another request can run
between. Two concurrent `UpdateItem ... ConditionExpression "#status = :running"` calls can then
both succeed, which DynamoDB never allows. The platform's exactly-once effects rest on those
conditions (fleet's job completion, the pool's claims, the retraining cap's leases), so without
this lock the local run reports duplicates that AWS would have refused: seen once in CI as
"1 deliveries were recognised as duplicates, expected 2".

Each DynamoDB and SSM request therefore runs under one lock. Neither service long-polls, so
serialising them costs nothing a local run notices. SQS is left alone: its receives may overlap
(SQS itself delivers at least once) and its long polls must not hold a lock.

MOTO_SWITCH_INTERVAL (seconds) shortens Python's thread switch interval. Tests set it to make
interleavings that are rare at the default likely, so the lock is proven rather than assumed.
"""
import functools
import os
import sys
import threading

from moto.core.responses import BaseResponse
from moto.dynamodb.responses import DynamoHandler
from moto.server import main
from moto.ssm.responses import SimpleSystemManagerResponse


def serialised(handler: type, lock: threading.Lock) -> None:
    call = handler.call_action

    @functools.wraps(call)
    def call_action(self: BaseResponse):  # type: ignore[no-untyped-def]
        with lock:
            return call(self)

    handler.call_action = call_action  # type: ignore[method-assign]


if __name__ == "__main__":
    interval = os.environ.get("MOTO_SWITCH_INTERVAL")
    if interval:
        sys.setswitchinterval(float(interval))
    for handler in (DynamoHandler, SimpleSystemManagerResponse):
        serialised(handler, threading.Lock())
    main(sys.argv[1:])
