"""The evidence channel keeps its events when the program closes or reuses its descriptor
(both ends in this process: no torch, no child)."""

from __future__ import annotations

import os
import sys

import pytest

from torchlint.runtime.channel import EvidenceChannel, ChannelWriter

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the second route is an abstract socket")


def _writer(channel: EvidenceChannel) -> ChannelWriter:
    # In a real run the child owns this end; here the writer takes it over (and closes the original).
    return ChannelWriter(channel.child_settings())


def test_events_arrive_in_order_through_the_pipe_moved_out_of_the_low_numbers():
    channel = EvidenceChannel()
    try:
        writer = _writer(channel)
        assert writer._fd is not None and writer._fd >= 64  # far from what a program reuses
        for step in range(3):
            writer.emit("progress", optimizer_steps=step, text="x" * 100_000)  # larger than the pipe's buffer
        writer.emit("outcome", status="completed")
        writer.close()
        events = channel.collect(wait=5)
    finally:
        channel.close()
    assert [(e["event"], e.get("optimizer_steps")) for e in events] == [
        ("progress", 0), ("progress", 1), ("progress", 2), ("outcome", None)]


@linux_only
def test_a_closed_or_reused_descriptor_is_never_written_and_events_take_the_socket(tmp_path):
    channel = EvidenceChannel()
    user_file = tmp_path / "user.txt"
    try:
        writer = _writer(channel)
        writer.emit("start")
        os.close(writer._fd)  # the program closes every inherited descriptor...
        writer.emit("progress", optimizer_steps=1)
        hijacked = writer._fd
        mine = os.open(user_file, os.O_WRONLY | os.O_CREAT)
        os.dup2(mine, hijacked)  # ...and its own file lands on our (new) number
        writer.emit("outcome", status="completed")
        writer.close()
        os.close(mine)
        os.close(hijacked)
        events = channel.collect(wait=5)
    finally:
        channel.close()
    assert [e["event"] for e in events] == ["start", "progress", "outcome"]
    assert user_file.read_bytes() == b""


def test_a_channel_that_cannot_be_written_is_dropped_silently():
    channel = EvidenceChannel()
    channel.close()
    writer = ChannelWriter({"fd": None, "socket": channel.socket_name})
    writer.emit("outcome", status="completed")  # nowhere to go: no exception into the target
    channel.child_started()
