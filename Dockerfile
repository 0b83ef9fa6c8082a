# gloaddriver in a container, for runs on many hosts (docs/many-hosts.md: a Docker Swarm
# replicated job and a Kubernetes Indexed Job, both with --shard auto). From a checkout:
#   docker build -t gloaddriver .
# BASE is any image with python3 and its venv module: the default is pulled from a
# registry; scripts/build-image makes a Debian one here when no registry is reachable.
ARG BASE=python:3.11-slim
FROM ${BASE}
WORKDIR /src
COPY setup.cfg setup.py README.md ./
COPY gloaddriver/__init__.py ./gloaddriver/
# A venv of its own: the same steps on either base (Debian's python3 refuses a
# system-wide pip install). The dependencies first, in a layer a change of the code
# does not invalidate; then the package itself.
RUN python3 -m venv /opt/gloaddriver \
 && /opt/gloaddriver/bin/pip install --no-cache-dir '.[profile]'
COPY gloaddriver ./gloaddriver
RUN /opt/gloaddriver/bin/pip install --no-cache-dir --no-deps --force-reinstall . \
 && rm -rf /src
ENV PATH=/opt/gloaddriver/bin:$PATH
WORKDIR /
ENTRYPOINT ["gloaddriver"]
