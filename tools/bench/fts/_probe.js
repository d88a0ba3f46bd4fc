const fs=require('fs'),os=require('os'),path=require('path');
const { TenantStore } = require('@mmdb/storage');
const { FtsParticipant } = require('@mmdb/fts');
const { loadDocs } = require('./data'); const { manifest } = require('./ours');
(async()=>{
  const base=loadDocs(); const dir=fs.mkdtempSync(path.join(os.tmpdir(),'p-'));
  const fts=new FtsParticipant();
  const store=await TenantStore.open({dir,participants:[fts],sync:true}); await store.registerSchema(manifest());
  const N=20000; const t0=Date.now();
  for(let i=0;i<N;i+=1000){const ch=[];for(let j=i;j<i+1000;j++){const d=base[j%1400];ch.push({op:'put',schema:'bench.docs',row:{id:d.id+'-'+j,body:d.body}});}
    await store.commit({changes:ch});}
  console.log('docs/s',N/((Date.now()-t0)/1000));
  await store.close(); fs.rmSync(dir,{recursive:true});
})();
