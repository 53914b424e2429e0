/*
 * FreeRTOSConfig.h - the Partita FreeRTOS guest's kernel configuration.
 *
 * Owns the kernel's compile-time choices for the ARM_AARCH64_SRE port running at EL1
 * (built with -DGUEST): a 1 kHz tick on the EL1 virtual generic timer, GICv3 through the
 * ICC_* system registers, every task with a floating-point context (the Rust application
 * code may use the FP/SIMD registers anywhere). It must never hold application logic: the
 * hooks it names are implemented in the Rust crate (src/port.rs).
 */
#ifndef FREERTOS_CONFIG_H
#define FREERTOS_CONFIG_H

#include <stdint.h>

/* Scheduler. No time slicing: equal-priority tasks switch only when they yield or block
 * (Thread-Metric's cooperative test counts on it). 32 priorities, so that Thread-Metric's
 * priorities 1..31 map to configMAX_PRIORITIES - 1 - p. */
#define configUSE_PREEMPTION                    1
#define configUSE_TIME_SLICING                  0
#define configUSE_PORT_OPTIMISED_TASK_SELECTION 1
#define configMAX_PRIORITIES                    32
#define configTICK_RATE_HZ                      1000
#define configTICK_TYPE_WIDTH_IN_BITS           TICK_TYPE_WIDTH_64_BITS
#define configMINIMAL_STACK_SIZE                1024
#define configMAX_TASK_NAME_LEN                 16
#define configIDLE_SHOULD_YIELD                 1
#define configUSE_IDLE_HOOK                     1
#define configUSE_TICK_HOOK                     0
#define configUSE_TICKLESS_IDLE                 0
#define configUSE_TASK_NOTIFICATIONS            1
#define configTASK_NOTIFICATION_ARRAY_ENTRIES   1
#define configUSE_MUTEXES                       1
#define configUSE_RECURSIVE_MUTEXES             0
#define configUSE_COUNTING_SEMAPHORES           1
#define configQUEUE_REGISTRY_SIZE               0
#define configUSE_TIMERS                        0
#define configUSE_CO_ROUTINES                   0
#define configCHECK_FOR_STACK_OVERFLOW          0
#define configUSE_MALLOC_FAILED_HOOK            0
#define configUSE_TRACE_FACILITY                0
#define configGENERATE_RUN_TIME_STATS           0
#define configENABLE_BACKWARD_COMPATIBILITY     0

/* Memory: tasks and kernel objects come from heap_4's static array. */
#define configSUPPORT_DYNAMIC_ALLOCATION        1
#define configSUPPORT_STATIC_ALLOCATION         0
#define configTOTAL_HEAP_SIZE                   ( 512 * 1024 )

/* Every task owns an FPU context from creation (the Rust code is compiled with FP/SIMD). */
#define configUSE_TASK_FPU_SUPPORT              2

/*
 * GICv3 priorities: QEMU's cortex-a72 CPU interface (physical and virtual) implements
 * 5 priority bits, so 32 levels; the tick runs at the lowest usable level (30 << 3).
 * Interrupts at levels 18..31 may call the FreeRTOS FromISR API.
 */
#define configUNIQUE_INTERRUPT_PRIORITIES       32
#define configMAX_API_CALL_INTERRUPT_PRIORITY   18

/* The GICv2 build (ARM_AARCH64 port): the memory-mapped GIC, at the addresses build.rs
 * passes from the board description. */
#ifdef PARTITA_GICV2_DISTRIBUTOR
#define configINTERRUPT_CONTROLLER_BASE_ADDRESS          PARTITA_GICV2_DISTRIBUTOR
#define configINTERRUPT_CONTROLLER_CPU_INTERFACE_OFFSET  PARTITA_GICV2_CPU_OFFSET
#endif

/* The tick: set up by the Rust glue; the ISR re-arms the timer before the kernel runs. */
void vConfigureTickInterrupt( void );
#define configSETUP_TICK_INTERRUPT()            vConfigureTickInterrupt()
#define configCLEAR_TICK_INTERRUPT()

/* Assertions end in the Rust glue, which prints the location and halts. */
void vAssertCalled( const char * pcFile, unsigned long ulLine );
#define configASSERT( x )                       if( ( x ) == 0 ) vAssertCalled( __FILE__, __LINE__ )

/* Optional API functions. */
#define INCLUDE_vTaskDelay                      1
#define INCLUDE_xTaskDelayUntil                 1
#define INCLUDE_vTaskSuspend                    1
#define INCLUDE_vTaskPrioritySet                0
#define INCLUDE_uxTaskPriorityGet               0
#define INCLUDE_vTaskDelete                     1
#define INCLUDE_xTaskGetSchedulerState          1

#endif /* FREERTOS_CONFIG_H */
