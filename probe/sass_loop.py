"""The longest loop of an nvdisasm listing: its instruction mix, and where its global loads,
local stores and barrier sit (index, fraction of the loop)."""
import re, sys
from collections import Counter
ins=[]; labels={}; pending=[]
for l in open(sys.argv[1]):
    m=re.match(r'\s*(\.L_x_\d+):', l)
    if m: pending.append(m.group(1)); continue
    m=re.search(r'/\*([0-9a-f]{4,})\*/\s+(.*?);', l)
    if m:
        a=int(m.group(1),16)
        for p in pending: labels[p]=a
        pending=[]
        ins.append((a,m.group(2).strip()))
best=None
for a,t in ins:
    m=re.search(r'BRA\s+`\((\.L_x_\d+)\)', t) or re.search(r'BRA\s+0x([0-9a-f]+)', t)
    if not m: continue
    tgt=labels.get(m.group(1)) if m.group(1).startswith('.L') else int(m.group(1),16)
    if tgt is not None and tgt<a and (best is None or a-tgt>best[1]-best[0]): best=(tgt,a)
lo,hi=best
body=[(a,t) for a,t in ins if lo<=a<=hi]
n=len(body)
def op(t):
    w=t.split()
    w=w[1:] if w[0].startswith('@') else w
    return w[0].split('.')[0]
print(sys.argv[1], 'loop instructions', n, dict(Counter(op(t) for a,t in body).most_common(12)))
for i,(a,t) in enumerate(body):
    if op(t) in ('LDG','STS','BAR','LDGSTS'):
        print(f'{i:5d} {i/n:5.2f} {t}')
