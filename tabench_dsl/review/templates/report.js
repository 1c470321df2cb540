(function(){var f=document.getElementById('filters');f.style.display='flex';
function apply(){var v=f.elements.verdict.value,s=f.elements.system.value,n=0;
var a=f.elements.audit?f.elements.audit.value:'';
document.querySelectorAll('details.answer').forEach(function(d){
var ok=(!v||d.dataset.verdict===v)&&(!s||d.dataset.system===s)&&(!a||d.dataset.audit===a);d.hidden=!ok;if(ok)n++;});
document.getElementById('shown').textContent=n+' shown';}
f.addEventListener('change',apply);apply();})();
