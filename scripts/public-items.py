#!/usr/bin/env python3
"""Counts the public items of a crate from its rustdoc JSON: every item
reachable from the crate root through public modules, public re-exports
(`use`), and the members of reachable structs, enums, traits and inherent
impls (methods of trait impls are not counted). rustdoc's JSON leaves out
#[doc(hidden)] items (and all below them) unless it is run with
--document-hidden-items; --visible skips any that remain. Prints the total
and the count per kind.

    CARGO_TARGET_DIR=target/rustdoc-json cargo +nightly rustdoc -p gpu-mpi-device --lib -- \
        -Zunstable-options --output-format json
    python3 scripts/public-items.py target/rustdoc-json/doc/gpu_mpi_device.json
"""
import json, sys, collections
path=sys.argv[1]; visible='--visible' in sys.argv
d=json.load(open(path)); idx=d['index']
def hidden(it):
    for a in it.get('attrs',[]):
        s=a if isinstance(a,str) else json.dumps(a)
        if 'hidden' in s: return True
    return False
seen=set(); kinds=collections.Counter()
def visit(i, via_public=True):
    i=str(i)
    if i in seen or i not in idx: return
    it=idx[i]
    if it.get('crate_id',0)!=0: return
    if visible and hidden(it): return
    seen.add(i)
    inner=it['inner']; k=next(iter(inner)); body=inner[k]
    if k!='use' and k!='impl': kinds[k]+=1
    if k=='module':
        for c in body['items']:
            ci=idx.get(str(c))
            if ci and (ci.get('visibility')=='public' or next(iter(ci['inner']))=='impl'): visit(c)
    elif k=='use':
        if body.get('id') is not None: visit(body['id'])
    elif k=='struct':
        kk=body['kind']
        if isinstance(kk,dict):
            for v in kk.values():
                if isinstance(v,dict) and 'fields' in v:
                    for f in v['fields']:
                        if idx.get(str(f),{}).get('visibility')=='public': visit(f)
                elif isinstance(v,list):
                    for f in v:
                        if f is not None and idx.get(str(f),{}).get('visibility')=='public': visit(f)
        for im in body.get('impls',[]): visit(im)
    elif k=='enum':
        for v in body['variants']: visit(v)
        for im in body.get('impls',[]): visit(im)
    elif k=='union':
        for im in body.get('impls',[]): visit(im)
    elif k=='trait':
        for m in body['items']: visit(m)
    elif k=='impl':
        if body.get('trait') is None:
            for m in body['items']:
                if idx.get(str(m),{}).get('visibility')=='public': visit(m)
visit(d["root"])
print(sum(kinds.values()), dict(kinds.most_common()))
