"""Screenshots of a running wxlake dashboard for the documentation, through chromedriver
(headless Chromium, as tests/it/dashboard.rs drives it).

    wxlake --lake L serve --demo --addr 127.0.0.1:8080 &   # prints a key per tier
    python3 docs/screenshot.py http://127.0.0.1:8080 KEY /accuracy/KNYC "#bracket-accuracy" docs/bracket-accuracy.png

Logs in with KEY (sessionStorage, as the page's own form does), opens PATH, waits until
the page says it rendered, and saves a PNG of the element SELECTOR (the whole page when
it is "body"). Needs `chromedriver` and `chromium` on PATH and the `requests` package.
"""

import base64
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import requests


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    base, key, path, selector, out = sys.argv[1:]
    port = free_port()
    driver = subprocess.Popen(["chromedriver", f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    profile = tempfile.mkdtemp()
    try:
        wd = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                requests.get(f"{wd}/status", timeout=1)
                break
            except requests.ConnectionError:
                time.sleep(0.1)
        caps = {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {"binary": shutil.which("chromium"), "args": [
            "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", "--window-size=1280,2400"]}}}}
        session = requests.post(f"{wd}/session", json=caps, timeout=60).json()["value"]["sessionId"]
        s = f"{wd}/session/{session}"

        def js(script, *args):
            return requests.post(f"{s}/execute/sync", json={"script": script, "args": list(args)}, timeout=60).json()["value"]

        requests.post(f"{s}/url", json={"url": base + path}, timeout=60)
        js("sessionStorage.setItem('wxlake.key', arguments[0]); return null", key)
        requests.post(f"{s}/url", json={"url": base + path}, timeout=60)
        for _ in range(300):
            if js("return document.body.dataset.rendered || null"):
                break
            time.sleep(0.1)
        time.sleep(0.5)
        found = requests.post(f"{s}/element", json={"using": "css selector", "value": selector}, timeout=60).json()
        element = next(iter(found["value"].values()))
        js("arguments[0].scrollIntoView(); return null", {"element-6066-11e4-a52f-4a5d7f1e0f8d": element})
        png = requests.get(f"{s}/element/{element}/screenshot", timeout=60).json()["value"]
        with open(out, "wb") as f:
            f.write(base64.b64decode(png))
        requests.delete(s, timeout=60)
        print(f"wrote {out}")
    finally:
        driver.terminate()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
