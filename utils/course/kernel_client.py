"""Run a notebook in a fresh kernel (the grader, the build and check scripts, the widget tests) without stalls.

nbclient waits for each reply with one long zmq.asyncio poll. While a widget's Output captures a cell's display,
nbclient sends on that same socket, and the poll can then miss the reply's arrival: it wakes only when the cell's
timeout ends, finds the reply waiting and goes on as if nothing happened. (Measured here: a 4 s test took 124 s,
in about one run in three.) Waiting in short polls bounds what a missed wake-up can cost to one of them.
"""

import time
from queue import Empty

from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import Type, default

POLL_S = 0.25  # the longest a missed wake-up can delay a message
# The async channel class of the installed jupyter_client (its name and module differ between 6.x, which Colab
# ships, and 8.x, which requirements.txt pins).
AsyncChannel = AsyncKernelClient.shell_channel_class.default_value


class ShortPollChannel(AsyncChannel):
    """A channel whose get_msg polls at most POLL_S seconds at a time, until a message or the timeout."""

    async def get_msg(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - time.monotonic()))
            if await self.socket.poll(int(wait * 1000)):
                return await self._recv()
            if deadline is not None and time.monotonic() >= deadline:
                raise Empty


class ShortPollKernelClient(AsyncKernelClient):
    shell_channel_class = Type(ShortPollChannel)
    iopub_channel_class = Type(ShortPollChannel)
    stdin_channel_class = Type(ShortPollChannel)
    control_channel_class = Type(ShortPollChannel)


class ShortPollKernelManager(AsyncKernelManager):
    @default("client_factory")
    def _short_poll_client(self):
        return ShortPollKernelClient


def notebook_client(nb, client_class=None, **kwargs):
    """nbclient's NotebookClient (or `client_class`, a subclass) for `nb`, talking to its kernel in short polls."""
    from nbclient import NotebookClient

    return (client_class or NotebookClient)(nb, kernel_manager_class=ShortPollKernelManager, **kwargs)
