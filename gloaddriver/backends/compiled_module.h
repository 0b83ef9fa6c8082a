/* The module definition both optional C extensions share (backends/compiled.py says when
 * they are used): one source for CPython 2.7 and 3.x.
 *
 *   COMPILED_MODULE(_name, "docstring", function, "function's docstring")
 *
 * defines the method table of the module _name (its one function, METH_VARARGS) and
 * its init function for the interpreter it is built for;
 *
 *   COMPILED_MODULE_TABLE(_name, "docstring")
 *
 * the init function of a module that defines its own table, ``methods``.
 */
#ifndef GLOADDRIVER_COMPILED_MODULE_H
#define GLOADDRIVER_COMPILED_MODULE_H

#include <Python.h>

#define COMPILED_METHODS(function, fdoc)                                                \
    static PyMethodDef methods[] = {                                                    \
        {#function, function, METH_VARARGS, fdoc}, {NULL, NULL, 0, NULL}};

#if PY_MAJOR_VERSION >= 3
#define COMPILED_MODULE_TABLE(name, doc)                                                \
    static struct PyModuleDef module_def = {                                            \
        PyModuleDef_HEAD_INIT, #name, doc, -1, methods, NULL, NULL, NULL, NULL};        \
    PyMODINIT_FUNC PyInit_##name(void) { return PyModule_Create(&module_def); }
#else
#define COMPILED_MODULE_TABLE(name, doc)                                                \
    PyMODINIT_FUNC init##name(void) { Py_InitModule3(#name, methods, doc); }
#endif

#define COMPILED_MODULE(name, doc, function, fdoc)                                      \
    COMPILED_METHODS(function, fdoc)                                                    \
    COMPILED_MODULE_TABLE(name, doc)

#endif
