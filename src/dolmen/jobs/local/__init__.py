"""The local backend: ranks as processes on this host (``backend``), their GPU placement
(``placement``), the SQLite job store (``store``) and its users and quotas (``accounts``),
the detached supervisor (``supervisor``) and the GPU health it judges between starts
(``health``)."""
