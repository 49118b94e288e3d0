from fastapi import APIRouter

from attnviz import __version__
from attnviz.api.deps import DeviceDep
from attnviz.schemas import Health

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(device: DeviceDep) -> Health:
    """Liveness: the server answers and knows which device it computes on."""
    return Health(version=__version__, device=str(device))
