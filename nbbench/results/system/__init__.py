"""Results about the machine: the GPU check and the GPU node, the monitor, the doctor, the environment.

Layer: core (inside :mod:`nbbench.results`; imports only the core).

* :mod:`.gpu`     the GPU stack's check and benchmark
* :mod:`.collectives` collective operations' bus bandwidth over the ranks
* :mod:`.copies`  GPU→GPU copy bandwidth and latency, pair by pair
* :mod:`.monitor` a monitored cell or command: its timeline and verdict
* :mod:`.doctor`  the doctor's checks
* :mod:`.env`     the environment fingerprint
"""
