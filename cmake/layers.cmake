# Kiln's layers, in build order, and the layers each may use (Note [Layers] in
# cmake/check_layers.cmake). Read by check_layers.cmake, which checks every include against these
# lists, and by CMakeLists.txt, which builds each layer as an object library that declares them.
set(KILN_LAYERS util numerics sym core trace dispatch kernels ops autograd nn optim data io graph
    capture aot lower sched runtime codegen pipeline torch)

set(KILN_LOW_LAYERS util numerics sym core trace dispatch)
set(KILN_LAYER_USES_util "")
set(KILN_LAYER_USES_numerics "")
set(KILN_LAYER_USES_sym util numerics)
set(KILN_LAYER_USES_core util numerics sym)
set(KILN_LAYER_USES_trace util numerics sym core)
set(KILN_LAYER_USES_dispatch util numerics sym core trace)
set(KILN_LAYER_USES_kernels util numerics sym core)
set(KILN_LAYER_USES_ops ${KILN_LOW_LAYERS} kernels)
set(KILN_LAYER_USES_autograd ${KILN_LOW_LAYERS} kernels ops)
set(KILN_LAYER_USES_nn ${KILN_LOW_LAYERS} kernels ops autograd)
set(KILN_LAYER_USES_optim ${KILN_LOW_LAYERS} kernels ops autograd nn)
set(KILN_LAYER_USES_data ${KILN_LOW_LAYERS} kernels ops autograd)
set(KILN_LAYER_USES_io ${KILN_LOW_LAYERS} kernels ops autograd nn optim)
set(KILN_LAYER_USES_graph ${KILN_LOW_LAYERS})
set(KILN_LAYER_USES_capture ${KILN_LOW_LAYERS} kernels ops autograd graph)
set(KILN_LAYER_USES_aot ${KILN_LOW_LAYERS} kernels ops autograd graph capture)
set(KILN_LAYER_USES_lower ${KILN_LOW_LAYERS} ops graph)
set(KILN_LAYER_USES_sched ${KILN_LOW_LAYERS} graph lower)
set(KILN_LAYER_USES_runtime ${KILN_LOW_LAYERS} kernels ops autograd graph)
set(KILN_LAYER_USES_codegen ${KILN_LOW_LAYERS} graph lower sched runtime)
# The torch:: front end (include/kiln/torch.h) sits on top: a thin layer over the public API.
set(KILN_LAYER_USES_torch ${KILN_LOW_LAYERS} kernels ops autograd nn optim data io graph capture aot lower sched runtime codegen pipeline)
set(KILN_LAYER_USES_pipeline ${KILN_LOW_LAYERS} kernels ops autograd graph capture aot lower sched runtime codegen)

