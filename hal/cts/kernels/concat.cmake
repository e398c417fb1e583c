# cmake -DOUT=file "-DIN=a;b;..." -P concat.cmake: OUT = the INs, in order.
set(text "")
foreach(f ${IN})
  file(READ ${f} part)
  string(APPEND text "${part}")
endforeach()
file(WRITE ${OUT} "${text}")
