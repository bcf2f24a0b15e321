"""S3 and S3-compatible stores (AWS, MinIO, Ceph, OSS, COS): the settings (``S3Config``, the
``reader.s3`` section) and their resolution with the credentials (``S3Access``), shared by the
readers (``etl.read.remote``), the writers of outputs on a store (``etl.runtime.objstore``) and
the trainer's shard cache (``base.committed``). Stdlib and pyarrow only.

The driver resolves everything an executor or a training worker needs once
(``S3Access.resolve``): the endpoint, the region, the addressing style and the credentials, from
the settings and the standard AWS environment (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` in ``~/.aws/credentials``, ``AWS_ENDPOINT_URL[_S3]``,
``AWS_REGION``). Found credentials travel with the task, as Hadoop's ``fs.s3a.access.key`` does;
they never appear in a repr, a log line or a report.
"""

from __future__ import annotations

import configparser
import functools
import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

SCHEMES = ("s3", "s3a")


@dataclass(frozen=True)
class S3Config:
    # Host[:port] or URL of an S3-compatible store (MinIO, Ceph, OSS, COS); "" = AWS_ENDPOINT_URL_S3
    # or AWS_ENDPOINT_URL from the environment, else AWS itself.
    endpoint_override: str = ""
    # "" = AWS_REGION / AWS_DEFAULT_REGION, else us-east-1 (MinIO and moto accept any region).
    region: str = ""
    # Used when endpoint_override names no scheme: "http" for a MinIO without TLS.
    scheme: str = "https"
    # bucket.host addressing (AWS and OSS want it); False = path style host/bucket, what MinIO
    # and Ceph need (pyarrow's default, force_virtual_addressing=False).
    virtual_addressing: bool = False
    # Unsigned requests for a public bucket: no credentials are looked for.
    anonymous: bool = False
    # Trust the executors' own AWS credential chain (EC2 instance profile, IRSA, ECS task role)
    # when the driver finds no credentials; False = refuse before any work.
    instance_credentials: bool = False
    # Seconds; the AWS SDK's own defaults are 1 s connect / 3 s request, short for a busy store.
    connect_timeout_s: float = 10.0
    request_timeout_s: float = 60.0
    # Attempts per request on connection errors and 5xx/throttling (AWS standard retry strategy).
    retries: int = 5
    # Largest ranged GET of a sequential read (bytes): 8 MiB, where S3 throughput per request
    # levels off; also the read buffer held per open file.
    read_ahead_bytes: int = 8 << 20


class S3Refused(PermissionError):
    """The store cannot be read as configured (credentials, access); one line, with the fix."""


@dataclass(frozen=True)
class S3Access:
    """Everything an executor needs to open an object: resolved settings and credentials."""

    cfg: S3Config
    endpoint: str  # "" = AWS
    scheme: str
    region: str
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def resolve(cls, cfg: S3Config, env: dict[str, str] | None = None) -> S3Access:
        """Settings from ``cfg`` and the environment; raises ``S3Refused`` when no credentials
        are found and neither ``anonymous`` nor ``instance_credentials`` is set."""
        env = os.environ if env is None else env
        raw = cfg.endpoint_override or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or ""
        parts = urlsplit(raw if "://" in raw else f"{cfg.scheme}://{raw}") if raw else None
        region = cfg.region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
        base = cls(cfg, parts.netloc if parts else "", parts.scheme if parts else cfg.scheme, region)
        if cfg.anonymous:
            return base
        keys = _credentials(env)
        if keys is not None:
            return cls(cfg, base.endpoint, base.scheme, region, *keys)
        if (
            cfg.instance_credentials
            or env.get("AWS_WEB_IDENTITY_TOKEN_FILE")
            or env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
            or env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        ):
            return base  # the executors' own chain (IRSA, ECS task role, instance profile)
        raise S3Refused(
            "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE in "
            "~/.aws/credentials), or --set reader.s3.instance_credentials=true on EC2, or "
            "reader.s3.anonymous=true for a public bucket"
        )

    def filesystem(self):
        return _filesystem(self)


def _credentials(env) -> tuple[str, str, str | None] | None:
    """(access key, secret key, session token) from the environment, else the shared credentials
    file's profile (``AWS_PROFILE``, else ``default``), else None."""
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env.get("AWS_SESSION_TOKEN") or None
    path = env.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.expanduser("~/.aws/credentials")
    parser = configparser.ConfigParser()
    try:
        parser.read(path)
    except configparser.Error:
        return None
    profile = env.get("AWS_PROFILE") or "default"
    if parser.has_option(profile, "aws_access_key_id") and parser.has_option(profile, "aws_secret_access_key"):
        return (
            parser.get(profile, "aws_access_key_id"),
            parser.get(profile, "aws_secret_access_key"),
            parser.get(profile, "aws_session_token", fallback=None),
        )
    return None


@functools.lru_cache(maxsize=4)
def _filesystem(access: S3Access):
    """One pyarrow S3FileSystem per process and settings (its connection pool is reused)."""
    from pyarrow import fs as pafs

    cfg = access.cfg
    return pafs.S3FileSystem(
        access_key=access.access_key,
        secret_key=access.secret_key,
        session_token=access.session_token,
        anonymous=cfg.anonymous,
        region=access.region,
        scheme=access.scheme,
        endpoint_override=access.endpoint or None,
        force_virtual_addressing=cfg.virtual_addressing,
        # An output stream starts its upload when its first part fills, and a file smaller than a
        # part is one PutObject at close, not a multipart upload of three requests: half the
        # client's CPU per small file (moto: 3.3 -> 1.7 ms) and a third of the store's requests.
        # Errors of the upload (a missing bucket, a 403) surface at close instead of at open; an
        # object still appears only whole, when its PUT or its multipart upload completes.
        allow_delayed_open=True,
        connect_timeout=cfg.connect_timeout_s,
        request_timeout=cfg.request_timeout_s,
        retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=max(1, cfg.retries)),
    )


def is_s3(path: str | None) -> bool:
    return path is not None and urlsplit(path).scheme.lower() in SCHEMES


def split(uri: str) -> tuple[str, str, str]:
    """(scheme, bucket, key) of ``s3://bucket/key``; the key has no leading slash."""
    parts = urlsplit(uri)
    return parts.scheme, parts.netloc, parts.path.lstrip("/")
