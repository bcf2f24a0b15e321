# One image for every service: the project and its pinned dependencies, Java for Spark.
FROM python:3.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid 1000 corpus
WORKDIR /opt/zhcorpus
COPY pyproject.toml requirements.lock ./
COPY etl etl
COPY train train
COPY filters filters
COPY jobs jobs
COPY sensitive_words sensitive_words
RUN pip install --no-cache-dir -c requirements.lock --extra-index-url https://download.pytorch.org/whl/cpu . \
    && chown -R corpus:corpus /opt/zhcorpus
ENV SPARK_HOME=/usr/local/lib/python3.11/site-packages/pyspark \
    PYSPARK_PYTHON=/usr/local/bin/python PYTHONPATH=/opt/zhcorpus
USER corpus
