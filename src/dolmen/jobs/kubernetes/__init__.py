"""The Kubernetes backend: Indexed Jobs with ``nvidia.com/gpu`` (``backend``), their
manifests as pure functions of the spec (``manifests``, ``yamltext``), the API client
(``api``) and GPU quotas as ResourceQuotas (``quota``)."""
