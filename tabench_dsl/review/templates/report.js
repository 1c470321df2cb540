(function(){var f=document.getElementById('filters');f.style.display='flex';
function apply(){var v=f.elements.verdict.value,s=f.elements.system.value,n=0;
document.querySelectorAll('details.answer').forEach(function(d){
var ok=(!v||d.dataset.verdict===v)&&(!s||d.dataset.system===s);d.hidden=!ok;if(ok)n++;});
document.getElementById('shown').textContent=n+' shown';}
f.addEventListener('change',apply);apply();})();
