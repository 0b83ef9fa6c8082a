# gloaddriver in a container, for runs on many hosts (docs/many-hosts.md: a Docker Swarm
# replicated job and a Kubernetes Indexed Job, both with --shard auto). From a checkout:
#   docker build -t gloaddriver .
# BASE is any image with python3 and its venv module: the default is pulled from a
# registry; scripts/build-image makes a Debian one here when no registry is reachable.
ARG BASE=python:3.11-slim

# The build: the package and its dependencies into a venv, with a C compiler and the
# interpreter's headers for its two optional extensions (the PostgreSQL row reader and
# the Tarantool reply cutter). On a base without apt-get they are skipped, and the
# pure-Python readers run; the manifest's row_reader and reply_reader say which.
FROM ${BASE} AS build
RUN if command -v apt-get >/dev/null; then \
      apt-get update \
      && apt-get install -y --no-install-recommends gcc libc6-dev \
      && if ! python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then \
           apt-get install -y --no-install-recommends python3-dev; \
         fi; \
    fi
WORKDIR /src
COPY setup.cfg setup.py README.md ./
COPY gloaddriver/__init__.py ./gloaddriver/
# A venv of its own: the same steps on either base (Debian's python3 refuses a
# system-wide pip install). The dependencies first, in a layer a change of the code
# does not invalidate; then the package itself.
RUN python3 -m venv /opt/gloaddriver \
 && /opt/gloaddriver/bin/pip install --no-cache-dir '.[profile]'
COPY gloaddriver ./gloaddriver
RUN /opt/gloaddriver/bin/pip install --no-cache-dir --no-deps --force-reinstall .

# The image that runs: the base and the venv, no compiler.
FROM ${BASE}
COPY --from=build /opt/gloaddriver /opt/gloaddriver
ENV PATH=/opt/gloaddriver/bin:$PATH
ENTRYPOINT ["gloaddriver"]
