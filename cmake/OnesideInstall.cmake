# `cmake --install`: headers, libraries, the launcher and a CMake package so that a separate
# project can do find_package(oneside) and link oneside::oneside.
include(CMakePackageConfigHelpers)

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/oneside" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS oneside_runtime oneside_rma oneside_pgas oneside
        EXPORT onesideTargets
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS oneside-run EXPORT onesideTargets RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(EXPORT onesideTargets NAMESPACE oneside::
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/cmake/oneside")

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/onesideConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/onesideConfig.cmake"
                              INSTALL_DESTINATION "${CMAKE_INSTALL_LIBDIR}/cmake/oneside")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/onesideConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/onesideConfig.cmake"
              "${PROJECT_BINARY_DIR}/onesideConfigVersion.cmake"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/cmake/oneside")

# oneside-bench (bench/oneside-bench, Python 3, standard library): the command in bin/, its
# package and the study definitions in share/oneside/bench, where the command looks for them.
install(PROGRAMS "${PROJECT_SOURCE_DIR}/bench/oneside-bench" DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/bench/oneside_bench"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/oneside/bench" PATTERN "__pycache__" EXCLUDE)
# (the studies' definitions only: their checked-in reports stay in the source tree)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/bench/studies"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/oneside/bench" FILES_MATCHING PATTERN "*.toml")
