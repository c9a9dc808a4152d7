# Optional parts: each defaults to ON when its dependency is found, and the
# configure step reports what was left out and why.
#
#   graft_optional_part(NAME "description" FOUND_VAR ["how to get it"])
#
# defines the cache option GRAFT_WITH_<NAME>. While the user has not set the
# option by hand it follows detection, so installing a dependency later and
# re-running cmake turns the part on without deleting the cache. An option
# set to ON by hand whose dependency is missing is turned off with a warning
# rather than failing the configure step: optional means optional.
set(GRAFT_OPTIONAL_PARTS "")

macro(graft_optional_part name description found)
  if(${found})
    set(_graft_auto ON)
  else()
    set(_graft_auto OFF)
  endif()
  # Never overridden by the user (the value is still the last detected
  # one): follow the current detection.
  if(DEFINED CACHE{GRAFT_WITH_${name}} AND DEFINED CACHE{_GRAFT_WITH_${name}_AUTO})
    if("${GRAFT_WITH_${name}}" STREQUAL "${_GRAFT_WITH_${name}_AUTO}")
      set_property(CACHE GRAFT_WITH_${name} PROPERTY VALUE ${_graft_auto})
    endif()
  endif()
  option(GRAFT_WITH_${name} "${description}" ${_graft_auto})
  set(_GRAFT_WITH_${name}_AUTO ${_graft_auto} CACHE INTERNAL "")

  set(GRAFT_${name}_DESCRIPTION "${description}")
  set(GRAFT_${name}_HINT "${ARGN}")
  set(GRAFT_${name}_WHY "")
  if(GRAFT_WITH_${name} AND NOT _graft_auto)
    message(WARNING "GRAFT_WITH_${name} is ON but its dependency was not found "
                    "(${ARGN}); building without it.")
    set(GRAFT_${name}_WHY "requested, but its dependency was not found")
    # A normal variable shadows the cache entry for the rest of this run.
    set(GRAFT_WITH_${name} OFF)
  elseif(NOT GRAFT_WITH_${name} AND _graft_auto)
    set(GRAFT_${name}_WHY "turned off by GRAFT_WITH_${name}=OFF")
  elseif(NOT GRAFT_WITH_${name})
    set(GRAFT_${name}_WHY "not found")
  endif()
  list(APPEND GRAFT_OPTIONAL_PARTS ${name})
  unset(_graft_auto)
endmacro()

function(graft_report_options)
  message(STATUS "graft ${PROJECT_VERSION} optional parts:")
  set(left_out "")
  foreach(part ${GRAFT_OPTIONAL_PARTS})
    if(GRAFT_WITH_${part})
      message(STATUS "  ${part}: ON   ${GRAFT_${part}_DESCRIPTION}")
    else()
      set(hint "")
      if(GRAFT_${part}_HINT AND NOT GRAFT_${part}_WHY MATCHES "turned off")
        set(hint ": ${GRAFT_${part}_HINT}")
      endif()
      message(STATUS "  ${part}: OFF  ${GRAFT_${part}_DESCRIPTION} "
                     "(${GRAFT_${part}_WHY}${hint})")
      list(APPEND left_out ${part})
    endif()
  endforeach()
  if(left_out)
    list(JOIN left_out ", " left_out)
    message(STATUS "graft is built without: ${left_out}")
  endif()
endfunction()
