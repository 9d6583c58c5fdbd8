"""The GPU node's own questions: collectives at bus bandwidth, copies, health under load.

* :mod:`.busbw`       nccl-tests' arithmetic: the operations, the size ladder, algbw and busbw (pure)
* :mod:`.collectives` one rank's run of the operations over the ladder, timed and checked
* :mod:`.table`       every rank's times combined into nccl-tests' table, the plateau, the metrics (pure)
* :mod:`.nccl`        the transport NCCL says it used (its INFO lines), the NCCL variables in force
* :mod:`.links`       the link a collective should run at (NVLink, PCIe, network) and the verdict
* :mod:`.copies`      host↔device pageable vs pinned, the GPU-to-GPU matrix (bandwidthTest's questions)
* :mod:`.health`      NVML under load: clocks event reasons, PCIe link, Xid during the run; with
  :mod:`.readings` what load does not change (ECC, row remaps, persistence, MIG, NVLink, fabric, power limit)

Layer: measure.  torch and pynvml only inside functions (through :mod:`nbbench.nvml` for NVML).
"""
