# Optional parts: each defaults to ON when its dependency is found, and the
# configure step reports what was left out and why.
set(GRAFT_OPTIONAL_PARTS "")

macro(graft_optional_part name description found)
  if(${found})
    option(GRAFT_WITH_${name} "${description}" ON)
  else()
    option(GRAFT_WITH_${name} "${description}" OFF)
  endif()
  list(APPEND GRAFT_OPTIONAL_PARTS ${name})
  set(GRAFT_${name}_DESCRIPTION "${description}")
endmacro()

function(graft_report_options)
  message(STATUS "graft ${PROJECT_VERSION} optional parts:")
  foreach(part ${GRAFT_OPTIONAL_PARTS})
    if(GRAFT_WITH_${part})
      message(STATUS "  ${part}: ON  (${GRAFT_${part}_DESCRIPTION})")
    else()
      message(STATUS "  ${part}: OFF (${GRAFT_${part}_DESCRIPTION}; dependency not found or disabled)")
    endif()
  endforeach()
endfunction()
