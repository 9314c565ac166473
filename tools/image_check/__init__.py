"""``make test-image``: Mnemo's container image built and run here with podman,
and the reference deployments of ``deploy/`` as far as this machine allows.

    python -m tools.image_check [--only image,container,kube,compose]

- ``images``: the base ``localhost/debian:bookworm-slim`` made from Debian's
  packages when missing (debootstrap minbase, slimmed as the official slim
  image is), ``deploy/Dockerfile`` built on it (host network, the host's CA
  bundle for pip), its size checked (at most 400 MB), and the stand-ins of the
  official ``postgres:15`` and ``nginx:1.22`` images, which cannot be pulled
  here, built from Debian's packages;
- ``container``: the image run with a volume and a secret, as
  docs/deployment.md says: its ``HEALTHCHECK``, also on another
  ``MNEMO_LISTEN``; the README's Python tour from this machine against it;
  SIGTERM drains it to exit code 0; a new container on the same volume has
  the data;
- ``kube``: ``podman kube play`` of ``deploy/kubernetes`` on an empty
  PostgreSQL database (the pods migrate before they serve), then played again
  on the migrated one, the data kept;
- ``compose``: ``deploy/compose.yaml`` with podman-compose: PostgreSQL, two
  replicas and nginx; gRPC and the web port through nginx, a replica stopped
  and its new address found.

Podman runs with ``tools/image_check/containers.conf`` (``CONTAINERS_CONF``).
Every port is published on 127.0.0.1 only, every step is bounded in time, and
every container, pod, volume, network and secret started is removed at the
end, whatever happened. Images are kept (later runs reuse their layers).
"""
