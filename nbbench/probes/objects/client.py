"""One S3 client for the object-storage probes: the URL, boto3's client, and errors in words.

Everything that talks to S3 goes through boto3 (its connection pool, retries and signing;
nothing hand-written).  boto3 is imported inside the functions that need it, so that
``nbbench s3 --help`` and ``import nbbench`` work without it; a run without it is one line
naming the extra to install.  Credentials come from boto3's standard chain (environment,
profile, instance or web-identity role) and are never printed, stored or reported: a
result records the endpoint's host, the region and the client's versions only.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from dataclasses import dataclass

from ...results import ProbeError

__all__ = [
    "S3Url",
    "is_s3",
    "parse_url",
    "make_client",
    "explain",
    "endpoint_labels",
    "endpoint_warning",
    "NEEDS_BOTO3",
    "FATAL_CODES",
]

NEEDS_BOTO3 = "the s3 probe needs boto3, which is not installed in this Python environment: pip install 'nbbench[s3]'"

#: error codes that end a run at once (nothing later can succeed)
FATAL_CODES = {
    "AccessDenied",
    "403",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "NoSuchBucket",
    "ExpiredToken",
    "InvalidToken",
    "AllAccessDisabled",
    "401",
}


@dataclass(frozen=True)
class S3Url:
    bucket: str
    prefix: str

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def key_url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"


def is_s3(name) -> bool:
    """Is ``name`` an s3:// URL (a dataset or target in object storage, not a local path)?"""
    return isinstance(name, str) and name.startswith("s3://")


def parse_url(text: str) -> S3Url:
    """'s3://bucket/some/prefix' -> S3Url('bucket', 'some/prefix'); a one-line error otherwise."""
    t = str(text or "").strip()
    if not t.startswith("s3://"):
        raise ProbeError(f"not an s3:// URL: {t!r} (write s3://BUCKET/PREFIX)")
    rest = t[5:]
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise ProbeError(f"no bucket in {t!r} (write s3://BUCKET/PREFIX)")
    if not (3 <= len(bucket) <= 63) or any(c not in "abcdefghijklmnopqrstuvwxyz0123456789.-_" for c in bucket.lower()):
        raise ProbeError(f"not a bucket name: {bucket!r} (3 to 63 letters, digits, '.', '-')")
    return S3Url(bucket, prefix)


def _host_of(endpoint_url: str | None) -> tuple[str, str, int | None]:
    """(scheme, host, port) of an endpoint URL, user information left out."""
    if not endpoint_url:
        return "https", "", None
    u = urllib.parse.urlsplit(endpoint_url)
    return (u.scheme or "https"), (u.hostname or ""), u.port


def _loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def endpoint_warning(endpoint_url: str | None) -> str | None:
    """A warning for a plain-HTTP endpoint that is not on this machine, else None."""
    scheme, host, _ = _host_of(endpoint_url)
    if scheme == "http" and not _loopback(host):
        return (
            f"plain HTTP to {host}: requests travel unencrypted across the network; "
            "use an https:// endpoint outside a trusted network"
        )
    return None


def check_endpoint(endpoint_url: str | None) -> None:
    if endpoint_url is None:
        return
    u = urllib.parse.urlsplit(endpoint_url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ProbeError(f"not an endpoint URL: {endpoint_url!r} (write http://HOST:PORT or https://HOST)")
    if u.username or u.password:
        raise ProbeError("the endpoint URL must not carry credentials; use the standard AWS credential chain")


def endpoint_labels(client, endpoint_url: str | None) -> dict:
    """What a result records about the endpoint: host[:port], region, client versions; never credentials."""
    import boto3
    import botocore

    scheme, host, port = _host_of(client.meta.endpoint_url if client is not None else endpoint_url)
    return {
        "endpoint": f"{scheme}://{host}{':' + str(port) if port else ''}",
        "region": (client.meta.region_name if client is not None else None) or "",
        "client": f"boto3 {boto3.__version__} (botocore {botocore.__version__})",
    }


def make_client(
    endpoint_url: str | None = None,
    region: str | None = None,
    pool: int = 10,
    connect_timeout: float = 3.0,
    read_timeout: float = 10.0,
    attempts: int = 3,
):
    """A boto3 S3 client with a pool of ``pool`` connections and bounded retries and timeouts."""
    check_endpoint(endpoint_url)
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise ProbeError(NEEDS_BOTO3) from None
    cfg = Config(
        max_pool_connections=max(10, int(pool)),
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        retries={"total_max_attempts": max(1, attempts), "mode": "standard"},
        signature_version="s3v4",
        s3={"addressing_style": "path" if endpoint_url else "auto"},
    )
    session = boto3.session.Session()
    try:
        return session.client(
            "s3", endpoint_url=endpoint_url, region_name=region or session.region_name or "us-east-1", config=cfg
        )
    except Exception as exc:  # noqa: BLE001 - a bad region/endpoint: one line
        raise ProbeError(explain(exc, None, endpoint_url)) from None


def error_code(exc: BaseException) -> str:
    """The S3 error code of a botocore ClientError ('NoSuchKey', 'SlowDown', '403'), else the class name."""
    resp = getattr(exc, "response", None)
    if isinstance(resp, dict):
        err = resp.get("Error") or {}
        code = str(err.get("Code") or "")
        if code:
            return code
        status = (resp.get("ResponseMetadata") or {}).get("HTTPStatusCode")
        if status:
            return str(status)
    return type(exc).__name__


def explain(exc: BaseException, url: S3Url | None, endpoint_url: str | None) -> str:
    """One sentence for an S3 failure: what happened and what to do (never credentials)."""
    code = error_code(exc)
    where = str(url) if url is not None else "the bucket"
    _, host, port = _host_of(endpoint_url)
    ep = f"{host}:{port}" if port else (host or "the S3 endpoint")
    name = type(exc).__name__
    if name in ("NoCredentialsError", "PartialCredentialsError", "NoAuthTokenError"):
        return (
            "no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
            "or run where an instance or web-identity role is available"
        )
    if name in ("EndpointConnectionError", "ConnectionClosedError"):
        return f"cannot connect to {ep}: nothing answers there (check --endpoint-url and the network)"
    if name in ("ConnectTimeoutError", "ReadTimeoutError"):
        return (
            f"{ep} did not answer in time ({name.replace('Error', '').replace('Timeout', ' timeout').lower()}): "
            "check --endpoint-url and the network"
        )
    if name == "InvalidRegionError":
        return f"not a region name: {exc}"
    if code == "NoSuchBucket":
        return f"no such bucket: {url.bucket if url else '?'} (at {ep})"
    if code in ("AccessDenied", "403", "AllAccessDisabled"):
        return f"access denied (403) to {where}: the credentials in use may not read it"
    if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "401", "ExpiredToken", "InvalidToken"):
        return f"the S3 credentials were refused ({code}): check the access key, secret and session token"
    if code in ("SlowDown", "503", "ServiceUnavailable", "RequestLimitExceeded", "Throttling"):
        return f"{ep} throttled the requests ({code}) even after retries: try fewer --streams"
    if code in ("NoSuchKey", "404"):
        return f"an object under {where} vanished while being read (deleted meanwhile?)"
    text = str(exc).splitlines()[0] if str(exc) else name
    return f"S3 request to {ep} failed: {text[:200]}"


def retries_of(response: dict | None) -> int:
    try:
        return int((response or {}).get("ResponseMetadata", {}).get("RetryAttempts") or 0)
    except (TypeError, ValueError):
        return 0
