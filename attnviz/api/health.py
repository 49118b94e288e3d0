from fastapi import APIRouter

from attnviz import __version__
from attnviz.api.deps import DeviceDep, RecurrentDep, RegistryDep, TracesDep, TrainingDep
from attnviz.schemas.health import Health, Load
from attnviz.services.text_trace import placement

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz(
    device: DeviceDep,
    traces: TracesDep,
    training: TrainingDep,
    recurrent: RecurrentDep,
    registry: RegistryDep,
) -> Health:
    """Liveness and readiness: the server answers (at once, never queued behind traces), knows
    its device and where each loaded model lives, and says how busy it is."""
    cache = traces.cache
    both = (traces.admission, traces.remote_admission)  # local models' and remote ones'
    load = Load(
        running=sum(a.running for a in both),
        waiting=sum(a.waiting for a in both),
        refused=sum(a.stats.refused + a.stats.expired for a in both),
        cache_mb=round(cache.bytes / 2**20, 1),
        cache_max_mb=round(cache.max_bytes / 2**20, 1),
        cache_entries=len(cache),
        training=training.training,
        queued=training.queued,
        comparing=recurrent.running,
        comparisons_queued=recurrent.queued,
    )
    # Trained runs' models are left out: their names are their runs' ids, capabilities.
    placed = {n: placement(m) for n, m in registry.models.items() if m.run is None}
    return Health(version=__version__, device=str(device), load=load, placement=placed)
