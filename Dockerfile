# One image for every service of docker-compose.yml: Python 3.11, Java 17 for Spark, the pinned
# dependencies (requirements.lock) and the project. It holds no secrets: docker compose mounts
# them at /run/secrets/ when a container starts.
FROM python:3.11-slim-bookworm

RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps g++ \
    && rm -rf /var/lib/apt/lists/*
# uid 1000 owns nothing but its home and the corpus volume's mount point (a new named volume
# copies this directory's owner); the code under /opt/zhcorpus stays root-owned and read-only to it.
RUN useradd --create-home --uid 1000 --user-group corpus \
    && mkdir -p /data/input /data/corpus \
    && chown corpus:corpus /data/corpus

WORKDIR /opt/zhcorpus
# Dependencies before the sources, so a code change does not reinstall them. torch comes first
# from the PyTorch CPU index, alone (--no-deps: its own dependencies come from PyPI below, pinned);
# a PyPI torch would pull the CUDA wheels. The lock pins torch==2.13.0+cpu.
COPY pyproject.toml requirements.lock ./
RUN pip install --no-cache-dir --no-deps --index-url https://download.pytorch.org/whl/cpu \
        "$(grep '^torch==' requirements.lock)" \
    && python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' \
        > /tmp/requirements.in \
    && pip install --no-cache-dir -c requirements.lock -r /tmp/requirements.in \
    && rm /tmp/requirements.in

COPY base base
COPY etl etl
COPY filters filters
COPY jobs jobs
COPY train train
COPY sensitive_words sensitive_words
COPY deploy deploy
# setup.py builds the compiled per-document pass (filters._docpass, C++: hence g++ above)
COPY setup.py setup.py
# Editable, so the package data the code reads next to itself (filters/resources/,
# sensitive_words/, jobs/configs/) is found: the wheel of a plain `pip install .` lacks them.
RUN pip install --no-cache-dir --no-deps -e . \
    && python -c 'import base, etl, filters, jobs, train, pyspark, ray, torch, fasttext, jieba, opencc, filters._docpass'

ENV SPARK_HOME=/usr/local/lib/python3.11/site-packages/pyspark \
    PYSPARK_PYTHON=/usr/local/bin/python \
    PYSPARK_DRIVER_PYTHON=/usr/local/bin/python \
    PYTHONUNBUFFERED=1
USER corpus
# Per service (ZHCORPUS_ROLE): a TCP connect to its UI, or its process; see deploy/healthcheck.sh.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD ["/opt/zhcorpus/deploy/healthcheck.sh"]
