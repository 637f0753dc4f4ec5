"""utils.course.kernel_client: a reply whose wake-up the poll missed is picked up at the next short poll, not at the
cell's timeout; a timeout still ends in Empty; notebooks with widgets run through it."""

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from queue import Empty

import nbformat
import pytest

from utils.course import kernel_client
from utils.course.kernel_client import ShortPollChannel, ShortPollKernelClient, ShortPollKernelManager, notebook_client


class MissedWakeUpSocket:
    """A socket holding a message whose arrival the first poll misses: that poll sleeps its whole timeout."""

    def __init__(self, has_message=True):
        self.has_message, self.polls = has_message, []

    async def poll(self, timeout_ms):
        self.polls.append(timeout_ms)
        if len(self.polls) == 1 or not self.has_message:
            await asyncio.sleep(timeout_ms / 1000)
            return 0
        return 1


def run(coroutine):
    """Run a coroutine to its end in a thread of its own (the test process may already run an event loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def channel(socket):
    ch = ShortPollChannel.__new__(ShortPollChannel)  # no zmq socket or session: only get_msg is under test
    ch.socket = socket

    async def recv():
        return {"msg_type": "execute_reply"}

    ch._recv = recv
    return ch


def test_a_missed_wake_up_costs_one_short_poll_not_the_timeout():
    socket = MissedWakeUpSocket()
    start = time.monotonic()
    msg = run(channel(socket).get_msg(timeout=120))
    took = time.monotonic() - start
    assert msg == {"msg_type": "execute_reply"}
    assert socket.polls[0] == kernel_client.POLL_S * 1000 and len(socket.polls) == 2
    assert took < 2 * kernel_client.POLL_S + 0.5, took


@pytest.mark.parametrize("timeout", [0, 0.6])
def test_no_message_ends_in_empty_at_the_timeout(timeout):
    socket = MissedWakeUpSocket(has_message=False)
    start = time.monotonic()
    with pytest.raises(Empty):
        run(channel(socket).get_msg(timeout=timeout))
    assert timeout <= time.monotonic() - start < timeout + kernel_client.POLL_S + 0.5
    assert all(ms <= kernel_client.POLL_S * 1000 for ms in socket.polls)


def test_the_manager_hands_out_short_poll_clients_on_every_channel():
    client = ShortPollKernelManager(kernel_name="python3").client()
    assert isinstance(client, ShortPollKernelClient)
    for name in ("shell", "iopub", "stdin", "control"):
        assert getattr(client, f"{name}_channel_class") is ShortPollChannel


def test_a_notebook_runs_through_it():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    client = notebook_client(nb, kernel_name="python3", timeout=60)
    assert client.kernel_manager_class is ShortPollKernelManager
    client.execute()
    assert nb.cells[0].outputs[0]["text"] == "42\n"
