#!/usr/bin/env python3
"""What one `brackets.php` answer costs over HTTP (issue 32), against `svc_high` on the same
server: a demo lake of DAYS days for KNYC and KMDW; per request the first answer (which
reads its rows from the lake: `bracket_odds::held`), then 40 more (rows held), median and p90.

Usage: .ci/venv/bin/python -W ignore benches/brackets_http.py [DAYS=30]
"""
import statistics, subprocess, sys, tempfile, time, urllib.request
BIN="target/release/wxlake"; HTTP=18297
work=tempfile.mkdtemp(); lake=f"file://{work}/lake"
def run(*a): return subprocess.run([BIN,"--lake",lake,*a],capture_output=True,text=True,check=True)
run("demo","--days",sys.argv[1] if len(sys.argv)>1 else "30","--stations","KNYC,KMDW")
key=run("keys","create","--tier","enterprise","--user","b","--admin").stdout.strip().splitlines()[-1]
srv=subprocess.Popen([BIN,"--lake",lake,"serve","--addr",f"127.0.0.1:{HTTP}","--flush-secs","3600"],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)
try:
    for _ in range(300):
        try: urllib.request.urlopen(f"http://127.0.0.1:{HTTP}/healthz",timeout=1); break
        except Exception: time.sleep(0.2)
    time.sleep(5)
    def get(p):
        r=urllib.request.Request(f"http://127.0.0.1:{HTTP}{p}",headers={"X-API-Key":key}); t=time.perf_counter()
        with urllib.request.urlopen(r) as x: x.read()
        return time.perf_counter()-t
    for name,p in [("brackets KNYC high today","/api/v2/brackets.php?station_code=KNYC&target=high"),
                   ("brackets KNYC high tomorrow","/api/v2/brackets.php?station_code=KNYC&target=high&date=%s"%time.strftime("%Y-%m-%d", time.gmtime(time.time()+86400))),
                   ("brackets KNYC high today, as_of 1 h ago","/api/v2/brackets.php?station_code=KNYC&target=high&as_of=%s"%time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time()-3600))),
                   ("svc_high (reference)","/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws")]:
        first=get(p); ts=[get(p) for _ in range(40)]
        print(f"{name:36} first {first*1e3:7.2f} ms  then median {statistics.median(ts)*1e3:7.2f} ms  p90 {sorted(ts)[35]*1e3:7.2f} ms")
finally:
    srv.terminate()
