
(function(){
  var boxes=document.querySelectorAll('input[name=outcome]'),suite=document.getElementById('suite-filter');
  function bySuite(el){return !suite.value||el.dataset.suite===suite.value;}
  function apply(){
    var on={},every=true;boxes.forEach(function(b){on[b.value]=b.checked;every=every&&b.checked;});
    var active=!every||!!suite.value,shown=0,total=0;
    document.querySelectorAll('tr.row').forEach(function(tr){
      var outs=tr.dataset.outcomes.split(' ').filter(Boolean);
      var ok=bySuite(tr)&&outs.some(function(o){return on[o];});
      tr.classList.toggle('hidden',!ok);
      if(tr.closest('#all-rows')){total++;if(ok)shown++;}
    });
    // everything above the rows follows the filter: the summary and speed rows of other suites
    // go, a section with no row left goes, and the charts (of every row) wait for no filter
    document.querySelectorAll('#summary tr[data-suite], tr.speed-row').forEach(function(tr){
      tr.classList.toggle('hidden',!bySuite(tr));});
    var speed=document.getElementById('speed');
    if(speed){speed.classList.toggle('hidden',!speed.querySelector('tr.speed-row:not(.hidden)'));}
    document.querySelectorAll('section.rows-block').forEach(function(s){
      s.classList.toggle('hidden',!s.querySelector('tr.row:not(.hidden)'));});
    var charts=document.getElementById('charts-block');
    if(charts){charts.classList.toggle('hidden',active);}
    document.getElementById('charts-note').classList.toggle('hidden',!active||!charts);
    document.querySelectorAll('#all-rows details').forEach(function(d){
      var any=!!d.querySelector('tr.row:not(.hidden)');d.classList.toggle('hidden',!any);
      if(active){d.open=any;}  // a filter opens what it found
    });
    document.getElementById('shown-count').textContent=shown+' of '+total+' rows shown';
    return active;}
  // a link can carry a filter: table.html#outcome=failed,crashed&suite=operators
  var want={};location.hash.replace(/^#/,'').split('&').forEach(function(kv){
    var i=kv.indexOf('=');if(i>0)want[kv.slice(0,i)]=decodeURIComponent(kv.slice(i+1));});
  if(want.outcome){var keep=want.outcome.split(',');boxes.forEach(function(b){b.checked=keep.indexOf(b.value)>=0;});}
  if(want.suite){suite.value=want.suite;}
  boxes.forEach(function(b){b.addEventListener('change',apply);});
  suite.addEventListener('change',apply);
  // a filter link lands on its rows: the filter bar at the top of the screen, the rows under it
  if(apply()){document.getElementById('filters').scrollIntoView();}
})();
