# gloaddriver in a container, for the many-host run of docs/many-hosts.md (a
# Kubernetes Indexed Job with --shard auto). Build from a checkout:
#   docker build -t gloaddriver .
FROM python:3.11-slim
WORKDIR /src
COPY setup.cfg setup.py README.md ./
COPY gloaddriver ./gloaddriver
RUN pip install --no-cache-dir '.[profile]'
WORKDIR /
ENTRYPOINT ["python", "-m", "gloaddriver"]
