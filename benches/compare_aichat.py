#!/usr/bin/env python3
"""Startup of linggen against aichat, an aichat-class Rust CLI (doc/performance.md).

    cargo build --release && cargo install aichat --locked
    python3 benches/compare_aichat.py

Measures `--version` (spawn to exit) and the time from spawn until a listening socket
receives the first byte of the chat request, for both tools pointed at the same
OpenAI-compatible URL. Medians of 30 and 20 runs.
"""
import os, shutil, socket, statistics, subprocess, tempfile, time

LINGGEN = os.path.join(os.path.dirname(__file__), "..", "target", "release", "linggen")
AICHAT = shutil.which("aichat") or os.path.expanduser("~/.cargo/bin/aichat")
CFG = tempfile.mkdtemp()
def first_byte(cmd, env, n=20):
    ts=[]
    for _ in range(n):
        s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(1); port=s.getsockname()[1]
        env2=dict(env); env2["PORT"]=str(port)
        # write configs with this port
        open(CFG + "/config.yaml","w").write(f"model: local:m\nclients:\n- type: openai-compatible\n  name: local\n  api_base: http://127.0.0.1:{port}/v1\n  models:\n  - name: m\n")
        home=tempfile.mkdtemp()
        open(home+"/linggen-agent.toml","w").write(f'[[models]]\nid="t"\nprovider="openai"\nmodel="m"\nurl="http://127.0.0.1:{port}/v1"\n')
        env2["LINGGEN_HOME"]=home
        t=time.perf_counter()
        p=subprocess.Popen(cmd, env=env2, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tempfile.mkdtemp())
        c,_=s.accept(); c.recv(1); ts.append(time.perf_counter()-t)
        p.kill(); p.wait(); c.close(); s.close()
    return statistics.median(ts)*1000, min(ts)*1000
def version(cmd, n=30):
    ts=[]
    for _ in range(n):
        t=time.perf_counter(); subprocess.run(cmd, stdout=subprocess.DEVNULL); ts.append(time.perf_counter()-t)
    return statistics.median(ts)*1000, min(ts)*1000
env=dict(os.environ); env["AICHAT_CONFIG_DIR"]=CFG
print("linggen --version  median %.2f ms min %.2f" % version([LINGGEN,"--version"]))
print("aichat --version   median %.2f ms min %.2f" % version([AICHAT,"--version"]))
print("linggen -p first byte median %.2f ms min %.2f" % first_byte([LINGGEN,"-p","hello"], env))
print("aichat first byte     median %.2f ms min %.2f" % first_byte([AICHAT,"hello"], env))
