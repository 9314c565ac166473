"""A consent withdrawal racing memory writes, through a real server: no write
lands after the withdrawal commits. On both backends."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import grpc

from mnemo.v1 import memories_pb2 as pb
from tests.api.governance import WITHDRAWN, Governance, set_consent
from tests.api.memories import USER, Stub, create, listed
from tests.support.rpc_errors import error_details


def test_no_write_lands_after_a_withdrawal_commits(memories: Stub, governance: Governance) -> None:
    """Writers save until refused while consent is withdrawn: each write
    either succeeded before the withdrawal or got MEMORY_CONSENT_WITHDRAWN,
    and no saved entry is younger than the withdrawal."""
    writers, attempts = 4, 200
    saved_enough = threading.Event()
    saved: list[pb.Memory] = []
    lock = threading.Lock()

    def write(writer: int) -> list[str]:
        outcomes = []
        for n in range(attempts):
            try:
                memory = create(memories, f"fact {n} of writer {writer}")
            except grpc.RpcError as error:
                outcomes.append(error_details(error).reason)
                break
            with lock:
                saved.append(memory)
                if len(saved) >= 2 * writers:
                    saved_enough.set()
            outcomes.append("")
        return outcomes

    with ThreadPoolExecutor(writers) as pool:
        running = [pool.submit(write, w) for w in range(writers)]
        assert saved_enough.wait(30), "the writers saved too little"
        withdrawal = set_consent(governance, USER, WITHDRAWN).consent.update_time
        outcomes = [future.result(60) for future in running]

    for per_writer in outcomes:
        # Successes, then exactly one refusal (writers stop at the first).
        assert per_writer[-1] == "MEMORY_CONSENT_WITHDRAWN", per_writer[-3:]
        assert set(per_writer[:-1]) == {""}
    stored = listed(memories)
    assert sorted(m.name for m in stored) == sorted(m.name for m in saved)
    youngest = max(m.create_time.ToDatetime() for m in stored)
    assert youngest <= withdrawal.ToDatetime()
