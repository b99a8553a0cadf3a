import json
import urllib.request

DEFAULT_TIMEOUT = 10


def get_json(url, headers=None, timeout=DEFAULT_TIMEOUT):
    """GET url and decode the JSON body."""
    req = urllib.request.Request(url, headers={"Accept": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        charset = resp.headers.get_content_charset() or "utf-8"
        return json.loads(resp.read().decode(charset))
