"""The Kubernetes backend: JobSets (or Indexed Jobs) with ``nvidia.com/gpu`` (``backend``),
their manifests as pure functions of the spec (``jobset``, ``manifests``, ``pod``,
``yamltext``; the job file's ``[kubernetes]`` table is ``options``), what the API server
says of them (``status``), the API client (``api``) and GPU quotas as ResourceQuotas
(``quota``)."""
