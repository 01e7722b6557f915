"""The visual-code ladder's tests render through the shared pools, as the domain's own tests do."""

from tests.domains.visual_code.conftest import _stop_shared_pools  # noqa: F401  (autouse fixture)
