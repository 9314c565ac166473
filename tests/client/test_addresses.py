"""One address format for every client and the CLI: ``host:port``,
``http://host:port`` (plaintext) and ``https://host:port`` (TLS), so that an
address copied from one client's docs works in another (the TypeScript
client and the Go one: their own suites)."""

from __future__ import annotations

import pytest

from mnemo.client import AsyncMnemoClient, MnemoClient, parse_target
from tests.support.mnemo_command import run_mnemo


@pytest.mark.parametrize("form", ["{}", "http://{}", "http://{}/"])
def test_a_server_is_reached_by_any_form_of_its_address(
    mnemo_target: str, user: str, form: str
) -> None:
    with MnemoClient(form.format(mnemo_target)) as client:
        client.create_memory(user, "Lives in Oslo")
        assert [m.text for m in client.list_memories(user)] == ["Lives in Oslo"]


async def test_the_async_client_takes_a_url_too(mnemo_target: str, user: str) -> None:
    async with AsyncMnemoClient(f"http://{mnemo_target}") as client:
        await client.create_memory(user, "Lives in Oslo")
        assert [m.text async for m in client.list_memories(user)] == ["Lives in Oslo"]


def test_the_cli_takes_a_url_too(mnemo_target: str, user: str) -> None:
    with MnemoClient(mnemo_target) as client:
        client.create_memory(user, "Lives in Oslo")
    exported = run_mnemo("export", "--user", user, "--target", f"http://{mnemo_target}")
    assert exported.returncode == 0, exported.stderr
    assert "Lives in Oslo" in exported.stdout


def test_the_forms_and_what_each_means() -> None:
    assert parse_target("127.0.0.1:50051", None) == ("127.0.0.1:50051", None)
    assert parse_target("http://127.0.0.1:50051/", None) == ("127.0.0.1:50051", None)
    assert parse_target("dns:///mnemo.internal:50051", None) == (
        "dns:///mnemo.internal:50051",
        None,
    )
    address, tls = parse_target("https://mnemo.example.com", None)
    assert address == "mnemo.example.com:443" and tls is not None
    assert parse_target("https://[::1]:8443", None)[0] == "[::1]:8443"
    with pytest.raises(ValueError, match="http://host:port"):
        parse_target("http://127.0.0.1:50051/mnemo.v1", None)
