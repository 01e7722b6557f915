"""The domain's tests render through the shared pools; each module stops them when it is done, so
the sandbox's leak checks elsewhere in the session see only their own workers."""

import pytest

from rewards import rendering


@pytest.fixture(autouse=True, scope="module")
def _stop_shared_pools():
    yield
    rendering.shutdown_default_pool()
