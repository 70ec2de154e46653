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

moto's SQS long poll waits only until its queue holds any message, visible or not: with a parked
(invisible) message in a queue, every long poll on it spins, and a handful of pollers spinning in
one process starve everything else of the GIL (a parked DLQ slowed every call to moto ~5x). So a
wait that finds only invisible messages sleeps a moment (POLL_IDLE_SECONDS) before looking again;
a message becoming visible is still seen within that moment.

moto's server also spends a third of its time on two things a local run never needs, measured
with py-spy during the ingest-gpu-outage drain: its request dispatcher lists and stats every module
directory of the moto package on every request (`list_of_moto_modules`, ~200 `isdir` calls, taken
under the dispatcher's lock), and werkzeug logs every request line to a pipe nobody reads. The list
is cached (the package does not change while the server runs) and request lines are logged only
for errors, which keeps the GIL for the calls the platform makes.

moto's SQS DeleteMessage rebuilds the queue's message list outside the queue's lock and then
assigns it back, while SendMessage appends under that lock: a message sent between the two steps
is dropped without a trace, never received and on no queue; two concurrent deletes undo each
other, and a deleted message comes back. A chaos run at 30 % faults (seed 3,
10,000 messages) lost 5 ingest windows that way: consumers delete while the traffic is still
being sent. AWS never loses an acknowledged send, so a delete here takes the queue's lock and
removes its message in place (atomic_deletes).

moto keeps a message past its queue's MessageRetentionPeriod: a receive that meets one marks it
received (its receive count goes up, it turns invisible), returns nothing more in that call, and
after maxReceiveCount such receives moves it to the DLQ. SQS deletes such a message: it is never
delivered again and never dead-lettered. A chaos run on a loaded machine, whose claimers could not
keep up with the pool's adverts (600 s retention), found 87 adverts in their class's DLQ that no
consumer had ever been handed, and receives that came back empty while adverts waited. So an
expired message is deleted here before a receive looks at the queue, and each deletion is written
as one JSON line to MOTO_SQS_EXPIRED_LOG when set (retention_deletes), so a run can tell a message
SQS let expire from one that was lost.

SQS acts on a message only through the receipt handle of its latest receive; moto acts on any
handle the message ever had (`had_receipt_handle`), so a consumer whose message was handed to
another would still delete it, and a duplicate run would go unseen locally. So, as the SQS API
reference says: a DeleteMessage with a superseded handle "will still succeed, but the message might
not be deleted" (played as its worst case, not deleted), and a ChangeMessageVisibility with one is
refused with ReceiptHandleIsInvalid, in AWS's words as users report them (mapbox/ecs-watchbot#135);
the batch forms apply the same rule per entry, through moto's own loops (latest_receipts_only).

MOTO_SWITCH_INTERVAL (seconds) shortens Python's thread switch interval. Tests set it to make
interleavings that are rare at the default likely, so the lock is proven rather than assumed.
"""
import functools
import json
import logging
import os
import sys
import threading
import time

from moto import backends
from moto.core.responses import BaseResponse
from moto.dynamodb.responses import DynamoHandler
from moto.server import main
from moto.sqs import models as sqs_models
from moto.sqs.exceptions import ReceiptHandleIsInvalid, SQSException
from moto.sqs.models import Queue
from moto.ssm.responses import SimpleSystemManagerResponse

POLL_IDLE_SECONDS = 0.02


def serialised(handler: type, lock: threading.Lock) -> None:
    call = handler.call_action

    @functools.wraps(call)
    def call_action(self: BaseResponse):  # type: ignore[no-untyped-def]
        with lock:
            return call(self)

    handler.call_action = call_action  # type: ignore[method-assign]


def patient_long_polls() -> None:
    wait = Queue.wait_for_messages

    @functools.wraps(wait)
    def wait_for_messages(self: Queue, timeout: int) -> None:  # type: ignore[no-untyped-def]
        had_messages = bool(self.messages)
        wait(self, timeout)
        if had_messages:
            # Only invisible messages: the caller loops straight back; don't let it spin.
            time.sleep(POLL_IDLE_SECONDS)

    Queue.wait_for_messages = wait_for_messages  # type: ignore[method-assign]


def fast_sqs_clock() -> None:
    """moto's SQS reads the time through datetime objects (unix_time: utcnow() minus the epoch, with an
    import inside each call), once per message per visibility check. With a few dozen messages in a
    queue that was most of moto's time in a local run. time.time() is the same value, read directly."""
    slow_seconds, slow_millis = sqs_models.unix_time, sqs_models.unix_time_millis

    def unix_time(dt=None):  # type: ignore[no-untyped-def]
        return time.time() if dt is None else slow_seconds(dt)

    def unix_time_millis(dt=None):  # type: ignore[no-untyped-def]
        return time.time() * 1000.0 if dt is None else slow_millis(dt)

    sqs_models.unix_time = unix_time  # type: ignore[assignment]
    sqs_models.unix_time_millis = unix_time_millis  # type: ignore[assignment]


def atomic_deletes() -> None:
    """Queue.delete_message with moto's semantics (an already-deleted handle is a no-op, an unknown
    one is ReceiptHandleIsInvalid), applied under the queue's lock and in place, so a concurrent
    SendMessage (add_message, under the same lock) or a move to the DLQ is never undone."""

    def delete_message(self: Queue, receipt_handle: str) -> None:  # type: ignore[no-untyped-def]
        with self._messages_lock:
            if receipt_handle in self.deleted_messages:
                return
            doomed = [m for m in self._messages if m.had_receipt_handle(receipt_handle)]
            if not doomed:
                raise ReceiptHandleIsInvalid()
            # A superseded handle deletes nothing, and says so to no one (latest_receipts_only).
            for message in (m for m in doomed if m.receipt_handle == receipt_handle):
                self.pending_messages.discard(message)
                self.deleted_messages.update(message.all_receipt_handles)  # type: ignore[arg-type]
                try:
                    self._messages.remove(message)
                except ValueError:
                    pass  # a receive moved it to the DLQ meanwhile

    Queue.delete_message = delete_message  # type: ignore[method-assign]


class StaleReceiptHandle(ReceiptHandleIsInvalid):
    def __init__(self, handle: str) -> None:
        SQSException.__init__(
            self,
            "ReceiptHandleIsInvalid",
            f"Value {handle} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.",
        )


def latest_receipts_only() -> None:
    """A visibility change with a handle superseded by a later receive is refused (deletes: atomic_deletes).
    moto's batch form calls this per entry and lists the refusal as that entry's failure."""
    backend_class = sqs_models.SQSBackend
    change = backend_class.change_message_visibility

    def change_message_visibility(self: sqs_models.SQSBackend, queue_name: str, receipt_handle: str, visibility_timeout: int) -> None:
        messages = list(self.get_queue(queue_name)._messages)
        if any(m.receipt_handle != receipt_handle and m.had_receipt_handle(receipt_handle) for m in messages):
            raise StaleReceiptHandle(receipt_handle)
        change(self, queue_name, receipt_handle, visibility_timeout)

    backend_class.change_message_visibility = change_message_visibility  # type: ignore[method-assign]


def retention_deletes(log_path: str | None) -> None:
    """Deletes messages older than their queue's retention, as SQS does, before each receive looks
    at the queue, and where moto's own receive meets one (a long poll that outlived it)."""
    log_lock = threading.Lock()
    backend_class = sqs_models.SQSBackend
    receive = backend_class.receive_message
    still_valid = backend_class.is_message_valid_based_on_retention_period

    def note(queue: Queue, message: sqs_models.Message, retention: int) -> None:
        if not log_path:
            return
        line = json.dumps(
            {"queueName": queue.name, "messageId": message.id, "sentMs": message.sent_timestamp, "retentionSeconds": retention, "expiredMs": int(time.time() * 1000)}
        )
        with log_lock, open(log_path, "a", encoding="utf-8") as out:
            out.write(line + "\n")

    def drop(queue: Queue, message: sqs_models.Message, retention: int) -> None:
        # Under the queue's lock, with the state atomic_deletes keeps: a later DeleteMessage of its handle is a no-op.
        queue.pending_messages.discard(message)
        queue.deleted_messages.update(message.all_receipt_handles)  # type: ignore[arg-type]
        try:
            queue._messages.remove(message)
        except ValueError:
            return  # deleted or moved meanwhile
        note(queue, message, retention)

    def retention_of(backend: sqs_models.SQSBackend, queue_name: str) -> int:
        return int(backend.get_queue_attributes(queue_name, ["MessageRetentionPeriod"])["MessageRetentionPeriod"])

    def receive_message(self: sqs_models.SQSBackend, queue_name: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        queue = self.get_queue(queue_name)
        retention = retention_of(self, queue_name)
        now_ms = time.time() * 1000
        with queue._messages_lock:
            for message in [m for m in queue._messages if m.sent_timestamp + retention * 1000 <= now_ms]:  # type: ignore[operator]
                drop(queue, message, retention)
        return receive(self, queue_name, *args, **kwargs)

    def is_message_valid_based_on_retention_period(self: sqs_models.SQSBackend, queue_name: str, message: sqs_models.Message) -> bool:
        if still_valid(self, queue_name, message):
            return True
        queue = self.get_queue(queue_name)
        with queue._messages_lock:
            drop(queue, message, retention_of(self, queue_name))
        return False

    backend_class.receive_message = receive_message  # type: ignore[method-assign]
    backend_class.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period  # type: ignore[method-assign]


def cached_module_list() -> None:
    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules  # type: ignore[assignment]


if __name__ == "__main__":
    interval = os.environ.get("MOTO_SWITCH_INTERVAL")
    if interval:
        sys.setswitchinterval(float(interval))
    for handler in (DynamoHandler, SimpleSystemManagerResponse):
        serialised(handler, threading.Lock())
    patient_long_polls()
    atomic_deletes()
    latest_receipts_only()
    retention_deletes(os.environ.get("MOTO_SQS_EXPIRED_LOG"))
    cached_module_list()
    fast_sqs_clock()
    # werkzeug's request lines (one per call) go to a pipe only read on a failed start.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    main(sys.argv[1:])
