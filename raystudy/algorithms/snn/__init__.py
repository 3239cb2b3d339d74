"""Spiking neurons by ultradiscretization (UltraLIF, Minoza, arXiv 2602.11206, ICML 2026)
and the baselines a neuromorphic reviewer would test them against.

* ``lse``, ``tropical`` (``lse.py``); ``ultralif_step``, ``UltraLIF``, ``UltraPLIF``,
  ``UltraDLIF``, ``UltraDPLIF`` with modes soft/hard/tropical (``neurons.py``);
* ``surrogate_lif_step``, ``SGLIF`` (true surrogate-gradient LIF/PLIF, ``surrogate.py``);
* the authors' smooth ``SoftLIF``/PLIF, ``DSpike``, and ``SigmaLIF`` (``baselines.py``);
* ``rate_encode``, ``direct_encode``, ``events_to_frames`` (``encoding.py``); ``SNN`` and
  ``ConvSNN`` with spike statistics (``networks.py``); readers, writers and the
  temporal-order task (``data.py``).
"""

from .baselines import DSpike, SigmaLIF, SoftLIF
from .encoding import direct_encode, events_to_frames, rate_encode
from .lse import lse, tropical
from .networks import SNN, ConvSNN
from .neurons import (
    MODES,
    SpikingNeuron,
    UltraDLIF,
    UltraDPLIF,
    UltraLIF,
    UltraPLIF,
    closed_form_t1,
    ultralif_step,
)
from .surrogate import SGLIF, spike_fn, surrogate_lif_step

__all__ = ["MODES", "SGLIF", "SNN", "ConvSNN", "DSpike", "SigmaLIF", "SoftLIF",
           "SpikingNeuron", "UltraDLIF", "UltraDPLIF", "UltraLIF", "UltraPLIF", "closed_form_t1",
           "direct_encode", "events_to_frames", "lse", "rate_encode", "spike_fn",
           "surrogate_lif_step", "tropical", "ultralif_step"]
